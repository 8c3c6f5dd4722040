package wire_test

import (
	"testing"

	"github.com/langhost/callbacks/internal/testkit/benchdata"
	"github.com/langhost/callbacks/internal/wire"
	"google.golang.org/protobuf/proto"
)

// BenchmarkCheckAndDecode compares checking properties (what a transform
// that does not read them pays) with decoding them.
func BenchmarkCheckAndDecode(b *testing.B) {
	for _, size := range []string{"small", "medium", "large"} {
		p, _ := proto.Marshal(benchdata.Properties(size))
		b.Run(size+"/validate", func(b *testing.B) {
			b.SetBytes(int64(len(p)))
			b.ReportAllocs()
			for b.Loop() {
				if err := wire.Validate(p); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(size+"/decode", func(b *testing.B) {
			b.SetBytes(int64(len(p)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := wire.Decode(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
