package invoketransforms

import (
	"context"
	"fmt"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/registration"
	"github.com/langhost/callbacks/internal/transformcore"
	"github.com/langhost/callbacks/monitor"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// InvokeOptions is the Go form of pulumirpc.TransformInvokeOptions, with one
// field for each field of the message. It converts both ways without loss:
// fields of newer engines that this version does not know are carried along
// and sent back untouched. The zero value is the empty option set. An
// InvokeOptions is not safe for concurrent mutation.
type InvokeOptions struct {
	// Provider is a reference ("URN::ID") to the provider to invoke the
	// function with (provider). The engine fills it from the invoke's own
	// options or from the parent component's providers.
	Provider string
	// PluginDownloadURL is where the provider plugin is downloaded from
	// (plugin_download_url).
	PluginDownloadURL string
	// Version is the provider plugin version (version).
	Version string
	// PluginChecksums maps platforms to provider plugin checksums
	// (plugin_checksums).
	PluginChecksums map[string][]byte

	unknown protoreflect.RawFields // fields of newer engines, sent back as received
}

// Args describes the function invocation being transformed. The transform
// owns it for the duration of the call and may change it and return parts
// of it.
type Args struct {
	// Token is the function's token, such as "aws:index/getRegion:getRegion".
	Token string
	// Options are all of the invoke's options. Never nil.
	Options *InvokeOptions

	props transformcore.Props
}

// Properties returns the function's arguments, decoding them on the first
// call. Secrets arrive as resource.Secret values and unknowns as
// resource.Computed values. The map belongs to a: changes to it show in
// [Args.Result]. Never nil.
//
// Properties passed the check when the request arrived, so they decode. Were
// that ever not so, Properties would return an empty map and the call would
// fail with InvalidArgument whatever the function returned.
func (a *Args) Properties() resource.PropertyMap {
	return a.props.Map()
}

// SetProperties replaces the function's arguments with m, as later seen by
// [Args.Properties] and sent by [Args.Result]. It is how a test builds Args
// with arguments, and how a transform replaces all of them.
func (a *Args) SetProperties(m resource.PropertyMap) {
	a.props.Set(m)
}

// Result is what an invoke transform returns. A nil *Result changes nothing.
type Result struct {
	// Properties replace the function's arguments. Nil leaves them
	// unchanged (unless the Result came from [Args.Result]); an empty
	// non-nil map removes them all.
	Properties resource.PropertyMap
	// Options replace ALL of the invoke's options. Nil leaves them unchanged.
	// To change one option, change it in [Args].Options and return that.
	Options *InvokeOptions

	// from is the Args whose arguments are sent when Properties is nil: set by
	// Args.Result, so that arguments nobody read are sent as the engine
	// encoded them.
	from *Args
}

// Result returns a result that sends the arguments and options back as they
// are in a when the response is encoded, so changes made to a after the
// call show in the result. If the arguments were never read, the result's
// Properties field is nil and they are sent exactly as the engine encoded them,
// without being decoded.
func (a *Args) Result() *Result {
	if a.props.Unread() {
		return &Result{Options: a.Options, from: a}
	}
	return &Result{Properties: a.Properties(), Options: a.Options}
}

// WithOptions calls edit on a's options and returns a result that sends them,
// leaving the arguments unchanged. The options edit does not touch are kept.
func (a *Args) WithOptions(edit func(*InvokeOptions)) *Result {
	return &Result{Options: transformcore.Options(&a.Options, edit)}
}

// WithProperties calls edit on a's arguments and returns a result that
// sends them, leaving the options unchanged.
func (a *Args) WithProperties(edit func(resource.PropertyMap)) *Result {
	m := a.Properties()
	if edit != nil {
		edit(m)
	}
	return &Result{Properties: m}
}

// Func is an invoke transform. The engine calls invoke transforms one at a
// time, in registration order, while it holds a lock that every Invoke
// takes: a Func must not call Invoke itself. Returning an error fails the
// invoke with that error, unwrapped.
type Func func(ctx context.Context, args *Args) (*Result, error)

// newFunc builds the callbacks.Func the engine calls for fn. dryRun is what
// the engine said when fn was registered: the request does not say it.
func newFunc(fn Func, dryRun bool) callbacks.Func {
	return transformcore.NewFunc(transformcore.Kind[Args, Result]{
		Kind:  callbacks.KindInvokeTransform,
		Field: "args",
		Decode: func(b []byte, owned bool, info *callbacks.CallInfo) (*Args, error) {
			args, err := decodePayload(b, owned)
			info.Type, info.DryRun = args.Token, dryRun
			return args, err
		},
		Props:  func(a *Args) *transformcore.Props { return &a.props },
		Encode: encodePayload,
	}, fn)
}

// RegisterStack registers fn as an invoke transform: the engine applies it to
// every later Invoke of the program, after the transforms registered before
// it. It first checks that the engine supports invoke transforms, then
// registers fn with mon's server and tells the engine; if the engine
// refuses, the registration is removed again. Every error is a
// [*callbacks.Error].
func RegisterStack(ctx context.Context, mon *monitor.Monitor, fn Func, opts ...callbacks.RegisterOption) (*pulumirpc.Callback, error) {
	const what = "invoketransforms: registering an invoke transform"
	fail := func(err error) error { return registration.Failed(callbacks.KindInvokeTransform, what, err) }
	if err := registration.Check(mon, fn == nil); err != nil {
		return nil, fail(err)
	}
	if err := mon.Require(ctx, monitor.InvokeTransforms); err != nil {
		return nil, fail(err)
	}
	info, err := mon.DeploymentInfo(ctx)
	if err != nil {
		return nil, fail(err)
	}
	cb, err := mon.Server().Register(ctx, newFunc(fn, info.GetDryRun()), opts...)
	if err != nil {
		return nil, fail(err)
	}
	if _, err := mon.Client().RegisterStackInvokeTransform(ctx, cb); err != nil {
		mon.Server().Registry().Unregister(cb.GetToken())
		return nil, fail(fmt.Errorf("RegisterStackInvokeTransform: %w", err))
	}
	return cb, nil
}
