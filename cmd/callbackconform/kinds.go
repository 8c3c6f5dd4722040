package main

import (
	"fmt"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Callback kinds, as the kit names them.
const (
	kindResourceTransform = "resource-transform"
	kindInvokeTransform   = "invoke-transform"
	kindResourceHook      = "resource-hook"
	kindErrorHook         = "error-hook"
	kindStateMigration    = "state-migration"
)

// kindOrder is the order of the report's rows.
var kindOrder = []string{kindResourceTransform, kindInvokeTransform, kindResourceHook, kindErrorHook, kindStateMigration}

// kind knows how to build the engine's requests for one callback kind and
// how to judge its answers.
type kind struct {
	name string
	// names are the words of which an error message must contain one to
	// name the kind.
	names []string
	// propsField is the field number of the request's properties (the
	// inputs, for hooks), where large and hand-made values go.
	propsField int
	// transform is true for kinds that answer with properties and options.
	transform bool
	// request builds a request carrying props; with every, every field is
	// set, without it only the required ones (no options at all).
	request func(c *checker, props *structpb.Struct, every bool) proto.Message
	// judge checks the answer to req: nil if it is the identity answer
	// (transforms: the properties and options sent, or none, meaning no
	// change; hooks: success; error hooks: success without retry).
	judge func(req proto.Message, resp []byte) []string
}

var kinds = map[string]*kind{
	kindResourceTransform: {
		name:       kindResourceTransform,
		names:      []string{"transform"},
		propsField: 5,
		transform:  true,
		request: func(_ *checker, props *structpb.Struct, every bool) proto.Message {
			r := &pulumirpc.TransformRequest{Type: resType, Name: resName, Custom: true, Properties: props}
			if every {
				r.Parent = urnParent
				r.Options = everyResourceTransformOption()
			}
			return r
		},
		judge: func(req proto.Message, b []byte) []string {
			sent := req.(*pulumirpc.TransformRequest)
			var got pulumirpc.TransformResponse
			if err := proto.Unmarshal(b, &got); err != nil {
				return []string{"the TransformResponse does not decode: " + err.Error()}
			}
			var out []string
			if got.Properties != nil {
				out = append(out, prefixed("properties: ", diffStructs(sent.GetProperties(), got.Properties))...)
			}
			if got.Options != nil {
				want := sent.GetOptions()
				if want == nil {
					want = &pulumirpc.TransformResourceOptions{}
				}
				out = append(out, prefixed("options: ", diffMessages(want, got.Options))...)
			}
			return out
		},
	},
	kindInvokeTransform: {
		name:       kindInvokeTransform,
		names:      []string{"invoke"},
		propsField: 2,
		transform:  true,
		request: func(_ *checker, props *structpb.Struct, every bool) proto.Message {
			r := &pulumirpc.TransformInvokeRequest{Token: "aws:s3/getBucket:getBucket", Args: props}
			if every {
				r.Options = everyInvokeOption()
			}
			return r
		},
		judge: func(req proto.Message, b []byte) []string {
			sent := req.(*pulumirpc.TransformInvokeRequest)
			var got pulumirpc.TransformInvokeResponse
			if err := proto.Unmarshal(b, &got); err != nil {
				return []string{"the TransformInvokeResponse does not decode: " + err.Error()}
			}
			var out []string
			if got.Args != nil {
				out = append(out, prefixed("args: ", diffStructs(sent.GetArgs(), got.Args))...)
			}
			if got.Options != nil {
				want := sent.GetOptions()
				if want == nil {
					want = &pulumirpc.TransformInvokeOptions{}
				}
				out = append(out, prefixed("options: ", diffMessages(want, got.Options))...)
			}
			return out
		},
	},
	kindResourceHook: {
		name:       kindResourceHook,
		names:      []string{"hook"},
		propsField: 5,
		request: func(_ *checker, props *structpb.Struct, every bool) proto.Message {
			r := &pulumirpc.ResourceHookRequest{Urn: urnResource, Id: "bucket-id", Name: resName, Type: resType, NewInputs: props}
			if every {
				r.OldInputs = props
				r.NewOutputs = props
				r.OldOutputs = props
				r.OldOptions = everyResourceOption()
				r.NewOptions = everyResourceOption()
			}
			return r
		},
		judge: func(_ proto.Message, b []byte) []string {
			var got pulumirpc.ResourceHookResponse
			if err := proto.Unmarshal(b, &got); err != nil {
				return []string{"the ResourceHookResponse does not decode: " + err.Error()}
			}
			if got.Error != "" {
				return []string{"the hook failed: " + got.Error}
			}
			return nil
		},
	},
	kindErrorHook: {
		name:       kindErrorHook,
		names:      []string{"error hook", "errorhook", "error-hook", "error_hook"},
		propsField: 5,
		request: func(_ *checker, props *structpb.Struct, every bool) proto.Message {
			r := &pulumirpc.ErrorHookRequest{Urn: urnResource, Id: "bucket-id", Name: resName, Type: resType,
				NewInputs: props, FailedOperation: "create", Errors: []string{"throttled (2)", "throttled (1)"}}
			if every {
				r.OldInputs = props
				r.OldOutputs = props
				r.OldOptions = everyResourceOption()
				r.NewOptions = everyResourceOption()
			}
			return r
		},
		judge: func(_ proto.Message, b []byte) []string {
			var got pulumirpc.ErrorHookResponse
			if err := proto.Unmarshal(b, &got); err != nil {
				return []string{"the ErrorHookResponse does not decode: " + err.Error()}
			}
			var out []string
			if got.Error != "" {
				out = append(out, "the error hook failed: "+got.Error)
			}
			if got.Retry {
				out = append(out, "the error hook asked to retry")
			}
			return out
		},
	},
	kindStateMigration: {
		name:       kindStateMigration,
		names:      []string{"migration"},
		propsField: 2,
		request: func(c *checker, props *structpb.Struct, every bool) proto.Message {
			return c.migrationRequest(props, every)
		},
		judge: judgeMigration,
	},
}

func prefixed(p string, ss []string) []string {
	for i := range ss {
		ss[i] = p + ss[i]
	}
	return ss
}

// namesKind reports whether msg names the kind k.
func namesKind(k *kind, msg string) bool {
	m := strings.ToLower(msg)
	for _, n := range k.names {
		if strings.Contains(m, n) {
			return true
		}
	}
	return false
}

// checkRequestsComplete is the kit's own guard: the "every field" requests
// must set every field the pinned protocol has.
func checkRequestsComplete() error {
	for _, m := range []proto.Message{everyResourceTransformOption(), everyInvokeOption(), everyResourceOption()} {
		if unset := fieldsUnset(m); len(unset) > 0 {
			return fmt.Errorf("the kit does not fill %s fields %v", m.ProtoReflect().Descriptor().FullName(), unset)
		}
	}
	return nil
}
