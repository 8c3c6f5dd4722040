// Command random is the stand-in for the pulumi-random provider that the
// integration tests give the real Pulumi CLI: no provider plugin can be
// downloaded there, so the tests build this one as pulumi-resource-random
// and name its directory in the project's Pulumi.yaml (plugins.providers).
//
// It serves the two type tokens the module's examples use, with the inputs
// they pass:
//
//   - random:index/randomPet:RandomPet: inputs length (words, default 2),
//     prefix, separator (default "-") and keepers. As in pulumi-random, the
//     pet's name is the resource's ID; the outputs are the inputs.
//   - random:index/randomString:RandomString: inputs length (default 8) and
//     keepers; the output "result", also the ID, is the string.
//
// Every value is derived from the resource's name and inputs, never from a
// random source, so a test can predict it. Unlike pulumi-random, where every
// input forces a replacement, only a change of keepers replaces a resource
// here; any other change is an update in place, so that tests can exercise
// both kinds of step.
//
// Setting RANDOM_THROTTLE_FIRST_CREATE=1 in the environment of the CLI (the
// engine starts its plugins with its own environment) makes the first
// Create of every resource fail with an error that says "throttled"; the
// next attempt for that resource, in the same deployment, succeeds. Setting
// RANDOM_FAIL_CREATE to a message makes every Create (after the throttled
// first attempt, if both are set) fail with that message, for tests of
// what a user sees when a provider fails.
//
// Setting RANDOM_CRASH_ON_CREATE to a file's path makes the provider process
// exit (status 2, without answering) in the first Create of any process that
// finds no file at that path; it creates the file first, so that the crash
// happens once across deployments.
package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// The package and the type tokens it serves.
const (
	Name       = "random"
	Version    = "4.99.0"
	PetType    = "random:index/randomPet:RandomPet"
	StringType = "random:index/randomString:RandomString"

	// ThrottleEnv names the variable that makes each resource's first
	// Create fail with a "throttled" error.
	ThrottleEnv = "RANDOM_THROTTLE_FIRST_CREATE"
	// FailEnv names the variable whose value, if not empty, is the
	// message every Create fails with.
	FailEnv = "RANDOM_FAIL_CREATE"

	// CrashEnv names the variable holding the path of the file whose
	// absence makes a Create crash the provider.
	CrashEnv = "RANDOM_CRASH_ON_CREATE"
)

func main() {
	err := provider.Main(Name, func(*provider.HostClient) (pulumirpc.ResourceProviderServer, error) {
		return newProvider(os.Getenv), nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "random provider:", err)
		os.Exit(1)
	}
}

// newProvider configures a Provider from the environment getenv reads.
func newProvider(getenv func(string) string) *Provider {
	throttle, _ := strconv.ParseBool(getenv(ThrottleEnv))
	return &Provider{throttle: throttle, failCreate: getenv(FailEnv), attempted: map[string]bool{}}
}

// Provider serves RandomPet and RandomString.
type Provider struct {
	pulumirpc.UnimplementedResourceProviderServer

	throttle   bool
	failCreate string // the message every Create fails with; "" for none

	mu        sync.Mutex
	attempted map[string]bool // URNs whose Create was tried in this process
}

// GetPluginInfo implements pulumirpc.ResourceProviderServer. The engine
// needs a version for a provider it loads from a path.
func (p *Provider) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: Version}, nil
}

// GetSchema implements pulumirpc.ResourceProviderServer with a schema that
// only names the package.
func (p *Provider) GetSchema(context.Context, *pulumirpc.GetSchemaRequest) (*pulumirpc.GetSchemaResponse, error) {
	return &pulumirpc.GetSchemaResponse{Schema: `{"name":"random","version":"` + Version + `"}`}, nil
}

// CheckConfig implements pulumirpc.ResourceProviderServer: the provider
// takes no configuration, and accepts any.
func (p *Provider) CheckConfig(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	return &pulumirpc.CheckResponse{Inputs: req.GetNews()}, nil
}

// DiffConfig implements pulumirpc.ResourceProviderServer: configuration
// never changes anything.
func (p *Provider) DiffConfig(context.Context, *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	return &pulumirpc.DiffResponse{Changes: pulumirpc.DiffResponse_DIFF_NONE}, nil
}

// Configure implements pulumirpc.ResourceProviderServer. Without preview
// support the engine never calls Create or Update in a preview.
func (p *Provider) Configure(context.Context, *pulumirpc.ConfigureRequest) (*pulumirpc.ConfigureResponse, error) {
	return &pulumirpc.ConfigureResponse{}, nil
}

// Check implements pulumirpc.ResourceProviderServer: the inputs are taken
// as they are, once the type is known.
func (p *Provider) Check(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	if err := knownType(req.GetType()); err != nil {
		return nil, err
	}
	return &pulumirpc.CheckResponse{Inputs: req.GetNews()}, nil
}

// Diff implements pulumirpc.ResourceProviderServer: every top-level input
// that differs is a change, and a change of keepers is a replacement.
func (p *Provider) Diff(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	olds := req.GetOldInputs()
	if olds == nil {
		olds = req.GetOlds()
	}
	changed := changedKeys(olds.GetFields(), req.GetNews().GetFields())
	if len(changed) == 0 {
		return &pulumirpc.DiffResponse{Changes: pulumirpc.DiffResponse_DIFF_NONE}, nil
	}
	resp := &pulumirpc.DiffResponse{Changes: pulumirpc.DiffResponse_DIFF_SOME, Diffs: changed}
	if slices.Contains(changed, "keepers") {
		resp.Replaces = []string{"keepers"}
	}
	return resp, nil
}

// Create implements pulumirpc.ResourceProviderServer.
func (p *Provider) Create(_ context.Context, req *pulumirpc.CreateRequest) (*pulumirpc.CreateResponse, error) {
	if err := knownType(req.GetType()); err != nil {
		return nil, err
	}
	if marker := os.Getenv(CrashEnv); marker != "" {
		if f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
			_ = f.Close()
			fmt.Fprintln(os.Stderr, "random provider: crashing in the Create of", req.GetUrn())
			os.Exit(2)
		}
	}
	if p.throttle && p.firstAttempt(req.GetUrn()) {
		return nil, status.Errorf(codes.Unavailable, "throttled: too many requests for %s, try again", req.GetName())
	}
	if p.failCreate != "" {
		return nil, status.Error(codes.Unknown, p.failCreate)
	}
	id, outputs := p.generate(req.GetType(), req.GetName(), req.GetProperties())
	if req.GetPreview() {
		id = ""
	}
	return &pulumirpc.CreateResponse{Id: id, Properties: outputs}, nil
}

// Update implements pulumirpc.ResourceProviderServer: the ID stays, the
// outputs follow the new inputs (a RandomString keeps its result).
func (p *Provider) Update(_ context.Context, req *pulumirpc.UpdateRequest) (*pulumirpc.UpdateResponse, error) {
	outputs := proto.Clone(req.GetNews()).(*structpb.Struct)
	if outputs.Fields == nil {
		outputs.Fields = map[string]*structpb.Value{}
	}
	if req.GetType() == StringType {
		outputs.Fields["result"] = structpb.NewStringValue(req.GetId())
	}
	return &pulumirpc.UpdateResponse{Properties: outputs}, nil
}

// Delete implements pulumirpc.ResourceProviderServer: nothing exists
// outside the state.
func (p *Provider) Delete(context.Context, *pulumirpc.DeleteRequest) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

// Read implements pulumirpc.ResourceProviderServer: what the state holds is
// what exists.
func (p *Provider) Read(_ context.Context, req *pulumirpc.ReadRequest) (*pulumirpc.ReadResponse, error) {
	return &pulumirpc.ReadResponse{Id: req.GetId(), Properties: req.GetProperties(), Inputs: req.GetInputs()}, nil
}

// firstAttempt reports whether this is the first Create of urn in this
// process, and remembers it.
func (p *Provider) firstAttempt(urn string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	first := !p.attempted[urn]
	p.attempted[urn] = true
	return first
}

// generate derives the ID and outputs of a new resource from its type, name
// and inputs.
func (p *Provider) generate(typ, name string, inputs *structpb.Struct) (string, *structpb.Struct) {
	outputs := proto.Clone(inputs).(*structpb.Struct)
	if outputs.Fields == nil {
		outputs.Fields = map[string]*structpb.Value{}
	}
	in := inputs.GetFields()
	switch typ {
	case StringType:
		result := randomString(name, intInput(in, "length", 8))
		outputs.Fields["result"] = structpb.NewStringValue(result)
		return result, outputs
	default:
		sep := "-"
		if v, ok := in["separator"]; ok {
			sep = v.GetStringValue()
		}
		pet := petName(name, intInput(in, "length", 2), sep)
		if prefix := in["prefix"].GetStringValue(); prefix != "" {
			pet = prefix + sep + pet
		}
		return pet, outputs
	}
}

func knownType(typ string) error {
	if typ != PetType && typ != StringType {
		return status.Errorf(codes.InvalidArgument, "random: unknown resource type %q", typ)
	}
	return nil
}

func intInput(in map[string]*structpb.Value, key string, def int) int {
	v, ok := in[key]
	if !ok {
		return def
	}
	n, ok := v.GetKind().(*structpb.Value_NumberValue)
	if !ok || n.NumberValue < 1 {
		return def
	}
	return int(n.NumberValue)
}

func changedKeys(olds, news map[string]*structpb.Value) []string {
	var keys []string
	for k, v := range news {
		if !proto.Equal(v, olds[k]) {
			keys = append(keys, k)
		}
	}
	for k := range olds {
		if _, ok := news[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

var (
	adjectives = []string{"brave", "calm", "eager", "gentle", "happy", "jolly", "kind", "lively", "proud", "witty"}
	animals    = []string{"badger", "falcon", "gecko", "heron", "koala", "lynx", "otter", "panda", "quokka", "wombat"}
)

// petName is length words, adjectives then an animal, chosen by the name.
func petName(name string, length int, sep string) string {
	words := make([]string, length)
	for i := range words {
		list := adjectives
		if i == length-1 {
			list = animals
		}
		words[i] = list[hash(name, i)%uint64(len(list))]
	}
	return strings.Join(words, sep)
}

// randomString is length letters and digits chosen by the name.
func randomString(name string, length int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, length)
	for i := range b {
		b[i] = alphabet[hash(name, i)%uint64(len(alphabet))]
	}
	return string(b)
}

func hash(name string, i int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", name, i)
	return h.Sum64()
}
