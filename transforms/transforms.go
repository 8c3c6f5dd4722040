package transforms

import (
	"context"
	"strings"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/registration"
	"github.com/langhost/callbacks/internal/transformcore"
	"github.com/langhost/callbacks/monitor"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/urn"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// Args describes the resource being transformed. The function owns it for
// the duration of the call and may change it and return parts of it; it is
// not safe for concurrent use.
//
// The properties are decoded only when [Args.Properties] is first called, so
// a transform that leaves them alone pays only for a check of their bytes.
// That check runs when the request arrives and refuses everything a decode
// would refuse, so properties that do not decode fail the call with
// InvalidArgument before the function runs, read or not.
type Args struct {
	// Type is the resource's type token, such as "aws:s3/bucket:Bucket".
	Type string
	// Name is the resource's name.
	Name string
	// Custom is true for custom resources and false for components.
	Custom bool
	// Parent is the URN of the resource's parent; it cannot be changed.
	Parent resource.URN
	// URN is the URN the resource will have, computed from Parent, Type and
	// Name. It is empty when the request names no valid parent.
	URN resource.URN
	// Options are all of the resource's options. Never nil.
	Options *ResourceOptions

	props transformcore.Props
}

// Properties returns the resource's inputs, decoding them on the first
// call. Secrets and unknowns arrive as output values (resource.Output),
// because that is how the engine sends them to resource transforms; output
// values also carry the dependencies of properties where the engine sends
// them. The map belongs to a: changes to it show in [Args.Result]. Never
// nil.
//
// Properties passed the check when the request arrived, so they decode. Were
// that ever not so, Properties would return an empty map and the call would
// fail with InvalidArgument whatever the function returned.
func (a *Args) Properties() resource.PropertyMap {
	return a.props.Map()
}

// SetProperties replaces the resource's inputs with m, as later seen by
// [Args.Properties] and sent by [Args.Result]. It is how a test builds Args
// with properties, and how a transform replaces all of them.
func (a *Args) SetProperties(m resource.PropertyMap) {
	a.props.Set(m)
}

// Result is what a transform returns. A nil *Result changes nothing.
type Result struct {
	// Properties replace the resource's inputs. Nil leaves them unchanged
	// (unless the Result came from [Args.Result]); an empty non-nil map
	// removes them all.
	Properties resource.PropertyMap
	// Options replace ALL of the resource's options: the engine does not
	// merge them. Nil leaves the options unchanged. To change one option,
	// change it in [Args].Options and return that.
	Options *ResourceOptions

	// from is the Args whose properties are sent when Properties is nil:
	// set by Args.Result, so that properties nobody read are sent as the
	// engine encoded them.
	from *Args
}

// Result returns a result that sends the resource's properties and options
// back as they are in a when the response is encoded, so changes made to a
// after the call show in the result. If the properties were never read,
// the result's Properties field is nil and they are sent exactly as the
// engine encoded them, without being decoded.
func (a *Args) Result() *Result {
	if a.props.Unread() {
		return &Result{Options: a.Options, from: a}
	}
	return &Result{Properties: a.Properties(), Options: a.Options}
}

// WithOptions calls edit on a's options and returns a result that sends
// them, leaving the properties unchanged. Because a.Options holds every
// option, the options edit does not touch are kept:
//
//	return args.WithOptions(func(o *transforms.ResourceOptions) { o.Protect = new(true) }), nil
func (a *Args) WithOptions(edit func(*ResourceOptions)) *Result {
	return &Result{Options: transformcore.Options(&a.Options, edit)}
}

// WithProperties calls edit on a's properties and returns a result that
// sends them, leaving the options unchanged.
func (a *Args) WithProperties(edit func(resource.PropertyMap)) *Result {
	p := a.Properties()
	if edit != nil {
		edit(p)
	}
	return &Result{Properties: p}
}

// Func is a resource transform. It may be called concurrently, for different
// resources, and may block, for instance on another resource's
// registration. Returning an error fails the resource's registration with
// that error's message.
type Func func(ctx context.Context, args *Args) (*Result, error)

// childURN computes the URN the engine gives a resource of type typ and
// name under parent, or "" when parent is not a valid URN. It takes the
// parent's stack, project and qualified type as the URN's own methods do
// ("::"-separated, after the prefix), without their allocations.
func childURN(parent resource.URN, typ, name string) resource.URN {
	if parent == "" || !parent.IsValid() {
		return ""
	}
	// A valid URN has the prefix and at least three separators.
	rest := strings.TrimPrefix(string(parent), urn.Prefix)
	stack, rest, _ := strings.Cut(rest, urn.NameDelimiter)
	project, rest, _ := strings.Cut(rest, urn.NameDelimiter)
	qualifiedType, _, _ := strings.Cut(rest, urn.NameDelimiter)
	return resource.NewURN(tokens.QName(stack), tokens.PackageName(project), tokens.Type(qualifiedType), tokens.Type(typ), name)
}

// newFunc builds the callbacks.Func the engine calls for fn. dryRun is what
// the engine said when fn was registered: the request does not say it.
func newFunc(fn Func, dryRun bool) callbacks.Func {
	return transformcore.NewFunc(transformcore.Kind[Args, Result]{
		Kind:  callbacks.KindResourceTransform,
		Field: "properties",
		Decode: func(b []byte, owned bool, info *callbacks.CallInfo) (*Args, error) {
			args, err := decodePayload(b, owned)
			info.URN, info.Type, info.ResourceName, info.DryRun = string(args.URN), args.Type, args.Name, dryRun
			return args, err
		},
		Props:  func(a *Args) *transformcore.Props { return &a.props },
		Encode: encodePayload,
	}, fn)
}

// Callback registers fn with mon's server and returns the Callback to put in
// a RegisterResourceRequest's transforms, which the engine applies to that
// resource and its descendants only. It asks the engine only whether the
// deployment is a preview (once per deployment); for stack-wide transforms
// use [RegisterStack]. Every error is a
// [*callbacks.Error].
func Callback(ctx context.Context, mon *monitor.Monitor, fn Func, opts ...callbacks.RegisterOption) (*pulumirpc.Callback, error) {
	const what = "transforms: registering a resource transform"
	if err := registration.Check(mon, fn == nil); err != nil {
		return nil, registration.Failed(callbacks.KindResourceTransform, what, err)
	}
	info, err := mon.DeploymentInfo(ctx)
	if err != nil {
		return nil, registration.Failed(callbacks.KindResourceTransform, what, err)
	}
	cb, err := mon.Server().Register(ctx, newFunc(fn, info.GetDryRun()), opts...)
	if err != nil {
		return nil, registration.Failed(callbacks.KindResourceTransform, what, err)
	}
	return cb, nil
}

// RegisterStack registers fn as a stack transform: the engine applies it to
// every resource registered afterwards, after the resource's own and its
// ancestors' transforms. It first checks that the engine supports
// transforms, then registers fn with mon's server and tells the engine; if
// the engine refuses, the registration is removed again. Every error is a
// [*callbacks.Error].
func RegisterStack(ctx context.Context, mon *monitor.Monitor, fn Func, opts ...callbacks.RegisterOption) (*pulumirpc.Callback, error) {
	const what = "transforms: registering a stack transform"
	if err := registration.Check(mon, fn == nil); err != nil {
		return nil, registration.Failed(callbacks.KindResourceTransform, what, err)
	}
	if err := mon.Require(ctx, monitor.Transforms); err != nil {
		return nil, registration.Failed(callbacks.KindResourceTransform, what, err)
	}
	cb, err := Callback(ctx, mon, fn, opts...)
	if err != nil {
		return nil, err
	}
	if _, err := mon.Client().RegisterStackTransform(ctx, cb); err != nil {
		mon.Server().Registry().Unregister(cb.GetToken())
		return nil, registration.Failed(callbacks.KindResourceTransform, what+": RegisterStackTransform", err)
	}
	return cb, nil
}
