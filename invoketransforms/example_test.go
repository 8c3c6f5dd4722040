package invoketransforms_test

import (
	"context"
	"fmt"
	"log"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/langhost/callbacks/invoketransforms"
)

// An invoke transform that pins every AWS function call to one region and
// keeps the invoke's options. A program registers it with RegisterStack;
// here it is called as the engine would call it, with Args built the way a
// test builds them.
func Example() {
	pinRegion := func(_ context.Context, args *invoketransforms.Args) (*invoketransforms.Result, error) {
		if _, ok := args.Properties()["region"]; ok {
			return nil, nil // no change
		}
		return args.WithProperties(func(m resource.PropertyMap) {
			m["region"] = resource.NewProperty("eu-central-1")
		}), nil
	}

	args := &invoketransforms.Args{Token: "aws:ec2/getAmi:getAmi", Options: &invoketransforms.InvokeOptions{Version: "6.0.0"}}
	args.SetProperties(resource.PropertyMap{"mostRecent": resource.NewProperty(true)})
	res, err := pinRegion(context.Background(), args)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("region:", res.Properties["region"].StringValue())
	fmt.Println("mostRecent:", res.Properties["mostRecent"].BoolValue())
	fmt.Println("options unchanged:", res.Options == nil)
	// Output:
	// region: eu-central-1
	// mostRecent: true
	// options unchanged: true
}
