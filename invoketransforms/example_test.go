package invoketransforms_test

import (
	"context"
	"fmt"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/invoketransforms"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// An invoke transform that pins every AWS function call to one region and
// keeps the invoke's options. In a program it is registered with
// RegisterStack; here it is registered by hand and the engine's call is
// played with the server's registry.
func Example() {
	srv, err := callbacks.Listen()
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	pinRegion := func(_ context.Context, args *invoketransforms.Args) (*invoketransforms.Result, error) {
		if _, ok := args.Arguments()["region"]; ok {
			return nil, nil // no change
		}
		return args.WithArgs(func(m resource.PropertyMap) {
			m["region"] = resource.NewProperty("eu-central-1")
		}), nil
	}
	cb, err := srv.Register(context.Background(), invoketransforms.Adapt(pinRegion), callbacks.Name("pin-region"))
	if err != nil {
		panic(err)
	}

	req, _ := proto.Marshal(&pulumirpc.TransformInvokeRequest{
		Token: "aws:ec2/getAmi:getAmi",
		Args: &structpb.Struct{Fields: map[string]*structpb.Value{
			"mostRecent": structpb.NewBoolValue(true),
		}},
		Options: &pulumirpc.TransformInvokeOptions{Version: "6.0.0"},
	})
	out, err := srv.Registry().Invoke(context.Background(), cb.Token, req)
	if err != nil {
		panic(err)
	}
	var res pulumirpc.TransformInvokeResponse
	if err := proto.Unmarshal(out, &res); err != nil {
		panic(err)
	}
	fmt.Println("region:", res.Args.Fields["region"].GetStringValue())
	fmt.Println("mostRecent:", res.Args.Fields["mostRecent"].GetBoolValue())
	fmt.Println("options unchanged:", res.Options == nil)
	// Output:
	// region: eu-central-1
	// mostRecent: true
	// options unchanged: true
}
