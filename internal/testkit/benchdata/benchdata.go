// Package benchdata builds the callback requests that the module's
// benchmarks send: the small, medium and large resource-transform payloads
// (bench/peers sends them to every server it compares), the other callback
// kinds carrying the same properties, an engine-encoded
// variant, and deeply nested property trees.
//
// Sizes:
//
//   - small: 5 top-level properties with a little nesting (a storage-bucket
//     resource), about 350 bytes serialized.
//   - medium: 50 top-level properties with nested objects and arrays, one
//     secret, one unknown and an array of 20 strings, about 3.5 KB.
//   - large: the medium properties plus a map of 1,200 strings and a list of
//     a few thousand small objects, at least 1 MiB serialized.
//
// Values use Pulumi's property encoding as plugin.MarshalProperties writes it
// with KeepSecrets, KeepUnknowns and KeepResources: a secret is the object
// {SigKey: SecretSig, "value": v} and an unknown is the unknown-string
// sentinel. They are written with structpb directly, so that importing this
// package costs the root package's benchmarks nothing beyond the protocol
// types.
//
// Every function returns a new message built deterministically, so callers
// may change what they get.
package benchdata

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Sizes are the payload sizes, in the order benchmarks run them.
var Sizes = []string{"small", "medium", "large"}

// LargeMinBytes is the size the serialized large TransformRequest reaches.
const LargeMinBytes = 1 << 20

// Signatures of Pulumi's property encoding.
const (
	SigKey             = "4dabf18193072939515e22adb298388d"
	SecretSig          = "1b47061264138c4ac30d75fd1eb44270"
	OutputValueSig     = "d0e6a833031e9bbcd3f4e8bde6ca49a4"
	UnknownStringValue = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
)

// StackURN is the parent of every resource in the payloads.
const StackURN = "urn:pulumi:dev::bench::pulumi:pulumi:Stack::bench-dev"

// URN returns the URN of a resource of type typ and name directly under the
// stack.
func URN(typ, name string) string {
	return "urn:pulumi:dev::bench::" + typ + "::" + name
}

// resource is what a size describes: a type, a name and its properties.
type resource struct {
	typ, name string
	props     *structpb.Struct
}

func build(size string) resource {
	switch size {
	case "small":
		return resource{"aws:s3/bucketV2:BucketV2", "assets", &structpb.Struct{Fields: smallProps()}}
	case "medium":
		return resource{"aws:ec2/instance:Instance", "web-server", &structpb.Struct{Fields: mediumProps()}}
	case "large":
		return resource{"kubernetes:core/v1:ConfigMap", "big-config", largeProps()}
	}
	panic(fmt.Sprintf("benchdata: unknown size %q (want one of %s)", size, strings.Join(Sizes, ", ")))
}

// Properties returns the property struct of the given size. It panics for a
// size not in [Sizes].
func Properties(size string) *structpb.Struct { return build(size).props }

// Options returns the resource options every payload carries: dependsOn,
// ignoreChanges, version and customTimeouts.
func Options() *pulumirpc.TransformResourceOptions {
	return &pulumirpc.TransformResourceOptions{
		DependsOn:     []string{URN("aws:ec2/vpc:Vpc", "main")},
		IgnoreChanges: []string{"tags"},
		Version:       "6.66.0",
		CustomTimeouts: &pulumirpc.RegisterResourceRequest_CustomTimeouts{
			Create: "10m",
			Delete: "5m",
		},
	}
}

// TransformRequest returns the resource transform request of the given size:
// a custom resource parented to the stack, with [Options].
func TransformRequest(size string) *pulumirpc.TransformRequest {
	r := build(size)
	return transformRequest(r.typ, r.name, r.props)
}

func transformRequest(typ, name string, props *structpb.Struct) *pulumirpc.TransformRequest {
	return &pulumirpc.TransformRequest{
		Type:       typ,
		Name:       name,
		Custom:     true,
		Parent:     StackURN,
		Properties: props,
		Options:    Options(),
	}
}

// EngineTransformRequest returns the medium request encoded as the engine
// really sends resource transforms: the secret and the unknown as output
// values, and one more property as an output value carrying a dependency.
func EngineTransformRequest() *pulumirpc.TransformRequest {
	f := mediumProps()
	f["adminPassword"] = object(fields{SigKey: str(OutputValueSig), "secret": boolean(true),
		"value": str("correct-horse-battery-staple-42")})
	f["privateIp"] = object(fields{SigKey: str(OutputValueSig)})
	f["subnetId"] = object(fields{SigKey: str(OutputValueSig), "value": str("subnet-0123456789abcdef0"),
		"dependencies": strs(URN("aws:ec2/subnet:Subnet", "private-a"))})
	return transformRequest("aws:ec2/instance:Instance", "web-server", &structpb.Struct{Fields: f})
}

// DeepTransformRequest returns a small request whose properties nest objects
// depth levels deep: {"level": 0, "child": {"level": 1, "child": {...}}}.
func DeepTransformRequest(depth int) *pulumirpc.TransformRequest {
	var v *structpb.Value = str("leaf")
	for i := depth - 1; i >= 0; i-- {
		v = object(fields{"level": number(float64(i)), "child": v})
	}
	props := &structpb.Struct{Fields: fields{"name": str("deep"), "tree": v}}
	return transformRequest("test:index:Deep", "deep", props)
}

// InvokeTransformRequest returns an invoke transform request whose
// arguments are the properties of the given size.
func InvokeTransformRequest(size string) *pulumirpc.TransformInvokeRequest {
	return &pulumirpc.TransformInvokeRequest{
		Token: "aws:ec2/getInstance:getInstance",
		Args:  Properties(size),
		Options: &pulumirpc.TransformInvokeOptions{
			Provider: URN("pulumi:providers:aws", "default") + "::04da6b54-80e4-46f7-96ec-b56ff0331ba9",
			Version:  "6.66.0",
		},
	}
}

// ResourceHookRequest returns an after-update hook request whose new and
// old inputs and outputs are the properties of the given size.
func ResourceHookRequest(size string) *pulumirpc.ResourceHookRequest {
	r := build(size)
	return &pulumirpc.ResourceHookRequest{
		Urn:        URN(r.typ, r.name),
		Id:         "i-0123456789abcdef0",
		Name:       r.name,
		Type:       r.typ,
		NewInputs:  r.props,
		OldInputs:  Properties(size),
		NewOutputs: Properties(size),
		OldOutputs: Properties(size),
	}
}

// ErrorHookRequest returns an error hook request for a failed update whose
// inputs and old outputs are the properties of the given size.
func ErrorHookRequest(size string) *pulumirpc.ErrorHookRequest {
	r := build(size)
	return &pulumirpc.ErrorHookRequest{
		Urn:             URN(r.typ, r.name),
		Id:              "i-0123456789abcdef0",
		Name:            r.name,
		Type:            r.typ,
		NewInputs:       r.props,
		OldInputs:       Properties(size),
		OldOutputs:      Properties(size),
		FailedOperation: "update",
		Errors:          []string{"RequestLimitExceeded: rate exceeded", "ThrottlingException: slow down"},
	}
}

// StateMigrationRequest returns a state migration request whose old state
// is the JSON form of the properties of the given size.
func StateMigrationRequest(size string) *pulumirpc.StateMigrationRequest {
	r := build(size)
	state, err := json.Marshal(r.props.AsMap())
	if err != nil {
		panic(err)
	}
	return &pulumirpc.StateMigrationRequest{Urn: URN(r.typ, r.name), OldState: state}
}

// Marshal serializes m and panics on failure, for building payloads.
func Marshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

type fields = map[string]*structpb.Value

func str(s string) *structpb.Value     { return structpb.NewStringValue(s) }
func number(f float64) *structpb.Value { return structpb.NewNumberValue(f) }
func boolean(b bool) *structpb.Value   { return structpb.NewBoolValue(b) }
func object(f fields) *structpb.Value  { return structpb.NewStructValue(&structpb.Struct{Fields: f}) }
func list(vs ...*structpb.Value) *structpb.Value {
	if vs == nil {
		vs = []*structpb.Value{}
	}
	return structpb.NewListValue(&structpb.ListValue{Values: vs})
}

func strs(ss ...string) *structpb.Value {
	vs := make([]*structpb.Value, len(ss))
	for i, s := range ss {
		vs[i] = str(s)
	}
	return list(vs...)
}

func secret(v *structpb.Value) *structpb.Value {
	return object(fields{SigKey: str(SecretSig), "value": v})
}

func smallProps() fields {
	return fields{
		"bucket":       str("my-app-assets-7f3a2c"),
		"acl":          str("private"),
		"forceDestroy": boolean(false),
		"tags":         object(fields{"Environment": str("dev"), "Owner": str("platform-team")}),
		"versioning":   object(fields{"enabled": boolean(true), "mfaDelete": boolean(false)}),
	}
}

func mediumProps() fields {
	groups := make([]string, 20)
	for i := range groups {
		groups[i] = fmt.Sprintf("sg-%017x", 0x5eed0000+i*104729)
	}
	tags := fields{}
	for i := range 10 {
		tags[fmt.Sprintf("team:tag-%02d", i)] = str(fmt.Sprintf("value-%02d-%s", i, strings.Repeat("y", i)))
	}
	f := fields{
		"ami":                      str("ami-0abcdef1234567890"),
		"instanceType":             str("t3.large"),
		"availabilityZone":         str("us-west-2a"),
		"subnetId":                 str("subnet-0123456789abcdef0"),
		"keyName":                  str("deployer-key"),
		"associatePublicIpAddress": boolean(true),
		"monitoring":               boolean(true),
		"ebsOptimized":             boolean(true),
		"disableApiTermination":    boolean(false),
		"sourceDestCheck":          boolean(true),
		"cpuCoreCount":             number(2),
		"cpuThreadsPerCore":        number(2),
		"hibernation":              boolean(false),
		"tenancy":                  str("default"),
		"userData": str("#!/bin/bash\nset -eu\napt-get update\napt-get install -y nginx\n" +
			"systemctl enable --now nginx\necho 'served by the benchmark' > /var/www/html/index.html\n"),
		"iamInstanceProfile":  str("web-server-profile"),
		"placementGroup":      str("web-pg"),
		"ipv6AddressCount":    number(0),
		"secondaryPrivateIps": strs("10.0.1.10", "10.0.1.11", "10.0.1.12"),
		"vpcSecurityGroupIds": strs(groups...),
		"tags":                object(tags),
		"volumeTags":          object(fields{"Backup": str("daily"), "Name": str("web-server-root")}),
		"rootBlockDevice": object(fields{
			"volumeSize": number(100), "volumeType": str("gp3"), "iops": number(3000),
			"throughput": number(125), "encrypted": boolean(true), "deleteOnTermination": boolean(true),
			"tags": object(fields{"Name": str("root")}),
		}),
		"ebsBlockDevices": list(
			object(fields{"deviceName": str("/dev/sdf"), "volumeSize": number(500), "volumeType": str("io2"),
				"iops": number(10000), "encrypted": boolean(true)}),
			object(fields{"deviceName": str("/dev/sdg"), "volumeSize": number(250), "volumeType": str("gp3"),
				"encrypted": boolean(true)}),
		),
		"metadataOptions": object(fields{
			"httpEndpoint": str("enabled"), "httpTokens": str("required"),
			"httpPutResponseHopLimit": number(1), "instanceMetadataTags": str("enabled"),
		}),
		"creditSpecification":              object(fields{"cpuCredits": str("unlimited")}),
		"capacityReservationSpecification": object(fields{"capacityReservationPreference": str("open")}),
		"networkInterfaces": list(object(fields{
			"deviceIndex": number(0), "networkInterfaceId": str("eni-0a1b2c3d4e5f60718"),
		})),
		"launchTemplate":     object(fields{"name": str("web-template"), "version": str("$Latest")}),
		"maintenanceOptions": object(fields{"autoRecovery": str("default")}),
		"privateDnsNameOptions": object(fields{
			"enableResourceNameDnsARecord": boolean(true), "enableResourceNameDnsAaaaRecord": boolean(false),
			"hostnameType": str("resource-name"),
		}),
		"enclaveOptions": object(fields{"enabled": boolean(false)}),
		"cpuOptions": object(fields{
			"coreCount": number(2), "threadsPerCore": number(2), "amdSevSnp": str("disabled"),
		}),
		// Top-level on purpose: an identity transform must return them as
		// they are, and some SDKs hoist nested secrets.
		"adminPassword": secret(str("correct-horse-battery-staple-42")),
		"privateIp":     str(UnknownStringValue),
	}
	for i := 0; len(f) < 50; i++ {
		k := fmt.Sprintf("setting%02d", i)
		switch i % 3 {
		case 0:
			f[k] = str(fmt.Sprintf("value-%d", i*37))
		case 1:
			f[k] = number(float64(i) * 2.5)
		default:
			f[k] = boolean(i%2 == 1)
		}
	}
	return f
}

// largeProps grows the medium properties with a string map and a list of
// rule objects until the serialized TransformRequest is LargeMinBytes or
// more.
func largeProps() *structpb.Struct {
	rng := rand.New(rand.NewPCG(5, 1))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./: "
	text := func(n int) string {
		var b strings.Builder
		b.Grow(n)
		for range n {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	f := mediumProps()
	data := fields{}
	for i := range 1200 {
		data[fmt.Sprintf("config-%04d.yaml", i)] = str(text(200 + rng.IntN(200)))
	}
	f["data"] = object(data)
	rule := func(i int) *structpb.Value {
		return object(fields{
			"id":       number(float64(i)),
			"priority": number(float64(1000 + i)),
			"action":   str([...]string{"allow", "deny"}[i%2]),
			"protocol": str([...]string{"tcp", "udp", "icmp"}[i%3]),
			"cidr":     str(fmt.Sprintf("10.%d.%d.0/24", i/256%256, i%256)),
			"ports":    list(number(80), number(443), number(float64(8000+i%1000))),
			"enabled":  boolean(i%7 != 0),
			"labels":   object(fields{"tier": str([...]string{"web", "app", "db"}[i%3]), "rule": str(fmt.Sprintf("r-%05d", i))}),
		})
	}
	props := &structpb.Struct{Fields: f}
	base := proto.Size(transformRequest("kubernetes:core/v1:ConfigMap", "big-config", props))
	var rules []*structpb.Value
	for size := base; size < LargeMinBytes; {
		// Estimate the rules still missing from the average so far, and add
		// at most 512 at a time so as not to overshoot by much.
		per := 200
		if len(rules) > 0 {
			per = (size - base) / len(rules)
		}
		for n := min(512, (LargeMinBytes-size)/per+1); n > 0; n-- {
			rules = append(rules, rule(len(rules)))
		}
		f["rules"] = list(rules...)
		size = proto.Size(transformRequest("kubernetes:core/v1:ConfigMap", "big-config", props))
	}
	return props
}
