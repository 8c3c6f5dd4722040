package transforms_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/monitor/monitortest"
	"github.com/langhost/callbacks/transforms"
)

const (
	teamURN  = "urn:pulumi:dev::shop::teams:index:Team::payments"
	otherURN = "urn:pulumi:dev::shop::teams:index:Team::search"
	topURN   = "urn:pulumi:dev::shop::pulumi:pulumi:Stack::shop-dev"
	petType  = "random:index/randomPet:RandomPet"
)

// reports collects what callbacks report to the user.
type reports struct {
	mu   sync.Mutex
	msgs []string // "URN: message"
}

func (r *reports) Report(_ context.Context, _ callbacks.Severity, urn, msg string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, urn+": "+msg)
	return nil
}

func (r *reports) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}

// attachEngine is a fake engine of deployment "dev" of project "shop" that
// accepts stack transforms, and a monitor of it whose server sends what
// callbacks report to the returned reports.
func attachEngine(t *testing.T) (*monitortest.Fake, *monitor.Monitor, *reports) {
	t.Helper()
	fake := &monitortest.Fake{
		DeploymentInfo: func(context.Context) (*pulumirpc.DeploymentInfo, error) {
			return &pulumirpc.DeploymentInfo{Project: "shop", Stack: "dev", SupportedFeatures: []pulumirpc.ResourceMonitorFeature{monitor.Transforms}}, nil
		},
		RegisterStackTransform: func(context.Context, *pulumirpc.Callback) error { return nil },
	}
	rep := &reports{}
	return fake, monitortest.Serve(t, fake, callbacks.WithReporter(rep)), rep
}

// theTransform returns the one stack transform the engine was given.
func theTransform(t *testing.T, fake *monitortest.Fake) *pulumirpc.Callback {
	t.Helper()
	got := monitortest.Requests[*pulumirpc.Callback](fake, "RegisterStackTransform")
	require.Len(t, got, 1, "one stack transform for every binding")
	return got[0]
}

// engineCall plays the engine asking the transform cb about a resource,
// and returns the answer.
func engineCall(t *testing.T, cb *pulumirpc.Callback, typ, name string, parent resource.URN, props map[string]*structpb.Value) *pulumirpc.TransformResponse {
	t.Helper()
	var resp pulumirpc.TransformResponse
	req := &pulumirpc.TransformRequest{Type: typ, Name: name, Parent: string(parent), Custom: true,
		Properties: &structpb.Struct{Fields: props}, Options: &pulumirpc.TransformResourceOptions{Protect: new(false)}}
	require.NoError(t, wiretest.Call(t, cb, req, &resp))
	return &resp
}

// label returns a transform that appends name to the "seen" property, so a
// test can tell which transforms ran, and in which order.
func label(name string) transforms.Func {
	return func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
		return a.WithProperties(func(p resource.PropertyMap) {
			seen := ""
			if v := p["seen"]; v.IsString() {
				seen = v.StringValue() + ","
			}
			p["seen"] = resource.NewProperty(seen + name)
		}), nil
	}
}

func seen(resp *pulumirpc.TransformResponse) string {
	return resp.GetProperties().GetFields()["seen"].GetStringValue()
}

// Any number of bindings, of any scopes, cost the engine one stack
// transform, which runs them in the order they were attached, each seeing
// the changes of those before it, and only where their scope says.
func TestAttachSharesOneTransform(t *testing.T) {
	t.Parallel()
	fake, mon, _ := attachEngine(t)
	ctx := t.Context()
	require.NoError(t, transforms.Attach(ctx, mon, transforms.Descendants(teamURN), label("team")))
	require.NoError(t, transforms.Attach(ctx, mon, transforms.Matching(transforms.ByType(petType)), label("pets")))
	require.NoError(t, transforms.Attach(ctx, mon, transforms.Descendants(otherURN), label("other")))
	require.NoError(t, transforms.Attach(ctx, mon, transforms.Descendants(teamURN).Where(transforms.ByName("ledger")), label("ledger")))
	for i := range 20 {
		require.NoError(t, transforms.Attach(ctx, mon, transforms.Descendants(resource.URN(fmt.Sprintf("%s-%d", otherURN, i))), label("x")))
	}
	cb := theTransform(t, fake)

	tests := []struct {
		typ, name string
		parent    resource.URN
		want      string
	}{
		{"teams:index:Team", "payments", topURN, ""},
		{petType, "pet", teamURN, "team,pets"},
		{"aws:s3/bucket:Bucket", "ledger", teamURN, "team,ledger"},
		{petType, "loose", topURN, "pets"},
		{"aws:s3/bucket:Bucket", "logs", otherURN, "other"},
		// A grandchild, through the child recorded above.
		{"aws:s3/bucketPolicy:BucketPolicy", "ledger", "urn:pulumi:dev::shop::teams:index:Team$aws:s3/bucket:Bucket::ledger", "team,ledger"},
		{"aws:s3/bucket:Bucket", "unrelated", topURN, ""},
	}
	for _, tt := range tests {
		resp := engineCall(t, cb, tt.typ, tt.name, tt.parent, nil)
		assert.Equal(t, tt.want, seen(resp), "%s %s under %s", tt.typ, tt.name, tt.parent)
		if tt.want == "" {
			assert.Nil(t, resp.GetProperties(), "%s: no binding, no change", tt.name)
			assert.Nil(t, resp.GetOptions(), "%s: no binding, no change", tt.name)
		}
	}
}

// The answer carries only what the bindings changed: options alone leave
// the properties unset, properties alone leave the options unset, and a
// binding that returns nothing changes nothing.
func TestAttachAnswersWithWhatChanged(t *testing.T) {
	t.Parallel()
	fake, mon, _ := attachEngine(t)
	protect := func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
		if a.Name != "opts" && a.Name != "both" {
			return nil, nil
		}
		return a.WithOptions(func(o *transforms.ResourceOptions) { o.Protect = new(true) }), nil
	}
	relabel := func(ctx context.Context, a *transforms.Args) (*transforms.Result, error) {
		if a.Name != "props" && a.Name != "both" {
			return nil, nil
		}
		return label("relabel")(ctx, a)
	}
	require.NoError(t, transforms.Attach(t.Context(), mon, transforms.Matching(nil), protect))
	require.NoError(t, transforms.Attach(t.Context(), mon, transforms.Matching(nil), relabel))
	cb := theTransform(t, fake)
	keep := map[string]*structpb.Value{"length": structpb.NewNumberValue(2)}

	resp := engineCall(t, cb, petType, "none", topURN, keep)
	assert.Nil(t, resp.GetProperties())
	assert.Nil(t, resp.GetOptions())

	resp = engineCall(t, cb, petType, "opts", topURN, keep)
	assert.Nil(t, resp.GetProperties())
	assert.True(t, resp.GetOptions().GetProtect())

	resp = engineCall(t, cb, petType, "props", topURN, keep)
	assert.Equal(t, "relabel", seen(resp))
	assert.Equal(t, 2.0, resp.GetProperties().GetFields()["length"].GetNumberValue(), "the other properties are kept")
	assert.Nil(t, resp.GetOptions())

	resp = engineCall(t, cb, petType, "both", topURN, keep)
	assert.Equal(t, "relabel", seen(resp))
	assert.True(t, resp.GetOptions().GetProtect())
}

// A binding's error fails the resource's registration with its message.
func TestAttachError(t *testing.T) {
	t.Parallel()
	fake, mon, _ := attachEngine(t)
	require.NoError(t, transforms.Attach(t.Context(), mon, transforms.Descendants(teamURN),
		func(context.Context, *transforms.Args) (*transforms.Result, error) {
			return nil, errors.New("no pets here")
		}))
	var resp pulumirpc.TransformResponse
	err := wiretest.Call(t, theTransform(t, fake), &pulumirpc.TransformRequest{Type: petType, Name: "p", Parent: teamURN}, &resp)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no pets here")
}

// A component whose URN is not known when the binding is attached (its
// registration is in flight) is looked up on each call until it is: from
// then on its descendants get the binding.
func TestAttachDescendantsOfAComponentInFlight(t *testing.T) {
	t.Parallel()
	fake, mon, rep := attachEngine(t)
	var mu sync.Mutex
	known := resource.URN("")
	lookup := func() (resource.URN, error) {
		mu.Lock()
		defer mu.Unlock()
		return known, nil
	}
	require.NoError(t, transforms.Attach(t.Context(), mon, transforms.DescendantsOf("teams:index:Team payments", lookup), label("team")))
	cb := theTransform(t, fake)

	assert.Empty(t, seen(engineCall(t, cb, "teams:index:Team", "payments", topURN, nil)), "the component itself")
	mu.Lock()
	known = teamURN
	mu.Unlock()
	assert.Equal(t, "team", seen(engineCall(t, cb, petType, "pet", teamURN, nil)))
	assert.Empty(t, seen(engineCall(t, cb, petType, "loose", topURN, nil)))
	assert.Empty(t, rep.all(), "nothing to warn about")
}

// A binding that can never apply is refused when it is attached.
func TestAttachNeverMatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		scope transforms.Scope
		want  string
	}{
		{"zero scope", transforms.Scope{}, "the scope is empty"},
		{"not a URN", transforms.Descendants("payments"), `"payments" is not a valid URN`},
		{"another stack", transforms.Descendants("urn:pulumi:prod::shop::teams:index:Team::payments"), "not of this deployment (stack dev of project shop)"},
		{"another project", transforms.Descendants("urn:pulumi:dev::bank::teams:index:Team::payments"), "not of this deployment"},
		{"never registered", transforms.DescendantsOf("a team", func() (resource.URN, error) {
			return "", errors.New("it is not registered")
		}), "it is not registered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, mon, _ := attachEngine(t)
			err := transforms.Attach(t.Context(), mon, tt.scope, label("x"))
			require.ErrorIs(t, err, transforms.ErrNeverMatches)
			assert.Contains(t, err.Error(), tt.want)
			var ce *callbacks.Error
			require.ErrorAs(t, err, &ce)
		})
	}
}

// What only comes to light later is a warning the user sees: a component
// that turns out to be of another deployment (its binding is dropped), and
// children of a component that were registered before its binding (they
// do not get it; later children do).
func TestAttachWarns(t *testing.T) {
	t.Parallel()
	fake, mon, rep := attachEngine(t)
	ctx := t.Context()
	// The shared transform is registered by the first binding, and sees
	// the team's first child before the team's own binding.
	require.NoError(t, transforms.Attach(ctx, mon, transforms.Matching(transforms.ByName("nothing")), label("none")))
	cb := theTransform(t, fake)
	engineCall(t, cb, petType, "early", teamURN, nil)
	require.NoError(t, transforms.Attach(ctx, mon, transforms.Descendants(teamURN), label("team")))
	// A component whose URN is known only after the Attach: the lookup
	// says "not yet" once. (Lookups run one at a time.)
	pending := true
	require.NoError(t, transforms.Attach(ctx, mon, transforms.DescendantsOf("a team of another stack", func() (resource.URN, error) {
		if pending {
			pending = false
			return "", nil
		}
		return "urn:pulumi:prod::shop::teams:index:Team::payments", nil
	}), label("never")))

	assert.Equal(t, "team", seen(engineCall(t, cb, petType, "late", teamURN, nil)))
	msgs := rep.all()
	require.Len(t, msgs, 2, "%q", msgs)
	assert.Contains(t, msgs[0], teamURN+": the binding attached at ")
	assert.Contains(t, msgs[0], "attach_test.go:")
	assert.Contains(t, msgs[0], "children registered before it, such as early, do not get it")
	assert.Contains(t, msgs[1], "to the descendants of a team of another stack can never match a resource, and is dropped")
	assert.Contains(t, msgs[1], "not of this deployment")

	engineCall(t, cb, petType, "later", teamURN, nil)
	assert.Len(t, rep.all(), 2, "each warning is given once")
}

func TestAttachBadArguments(t *testing.T) {
	t.Parallel()
	_, mon, _ := attachEngine(t)
	require.ErrorIs(t, transforms.Attach(t.Context(), nil, transforms.Matching(nil), label("x")), callbacks.ErrNilArgument)
	require.ErrorIs(t, transforms.Attach(t.Context(), mon, transforms.Matching(nil), nil), callbacks.ErrNilFunc)
}
