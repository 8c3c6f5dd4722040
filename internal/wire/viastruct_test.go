package wire_test

import (
	"math/rand/v2"
	"reflect"

	"fmt"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"testing"

	"github.com/langhost/callbacks/internal/testkit/benchdata"
	"github.com/langhost/callbacks/internal/wire"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// unmarshalViaWire is what internal/wire/props.Unmarshal could do: encode the
// struct again and decode the bytes directly, in linear time.
func unmarshalViaWire(s *structpb.Struct) (resource.PropertyMap, error) {
	b, err := proto.Marshal(s)
	if err != nil {
		return nil, err
	}
	return wire.Decode(b)
}

func BenchmarkPropsUnmarshal(b *testing.B) {
	cases := map[string]*structpb.Struct{}
	order := []string{}
	for _, s := range benchdata.Sizes {
		cases[s] = benchdata.Properties(s)
		order = append(order, s)
	}
	for _, d := range []int{250, 1000, 3000} {
		n := fmt.Sprintf("depth=%d", d)
		cases[n] = benchdata.DeepTransformRequest(d).GetProperties()
		order = append(order, n)
	}
	for _, n := range order {
		s := cases[n]
		b.Run("sdk/"+n, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := wire.UnmarshalStruct(s); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("fromstruct/"+n, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := wire.FromStruct(s); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("viawire/"+n, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := unmarshalViaWire(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestFromStructMatchesSDK(t *testing.T) {
	for name, s := range payloads() {
		want, err := plugin.UnmarshalProperties(s, keep)
		if err != nil {
			t.Fatal(err)
		}
		got, err := wire.FromStruct(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: maps differ", name)
		}
	}
	r := rand.New(rand.NewPCG(9, 9))
	for i := range 3000 {
		m := randomMap(r, 0)
		s, err := plugin.MarshalProperties(m, keep)
		if err != nil {
			t.Fatal(err)
		}
		want, err := plugin.UnmarshalProperties(s, keep)
		if err != nil {
			t.Fatal(err)
		}
		got, err := wire.FromStruct(s)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("%d: maps differ\nwant %v\ngot  %v", i, want, got)
		}
	}
}
