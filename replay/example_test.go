package replay_test

import (
	"fmt"
	"os"

	"github.com/langhost/callbacks/replay"
)

// A log recorded with PULUMI_DEBUG_GRPC=transform.jsonl pulumi up, for a
// program whose stack transform sets a prefix on a RandomPet.
func Example() {
	f, err := os.Open("testdata/transform.jsonl")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	for call, err := range replay.Read(f) {
		if err != nil {
			fmt.Println(err)
			continue
		}
		word, _ := call.Outcome()
		fmt.Printf("%d. %v %s of %s: %s\n", call.Seq, call.Kind, call.Registration.Method, call.Name, word)
		for _, c := range call.Changes(false) {
			fmt.Printf("   %s: %q -> %s\n", c.Path, c.Old, c.New)
		}
	}
	// Output:
	// 1. resource transform RegisterStackTransform of pet: changed
	//    properties.prefix: "" -> "tx"
}
