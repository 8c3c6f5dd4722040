// Command stateinfo reads a stack's state as `pulumi stack export` prints it
// and reports, for bench/entrypoint.sh, how deep the stack traces the engine
// stored for the resources of one type are: one line
//
//	RESOURCES MIN_FRAMES MAX_FRAMES
//
// where a resource's frames are the entries of its "stackTrace" (the Go SDK
// sends runtime.Callers of the goroutine that registered it, from the
// registration up to runtime.goexit; the engine keeps one entry per frame,
// with an empty source position for a frame whose file it cannot place).
// With -frames it also prints the source positions of the first resource's
// frames, one a line.
//
//	pulumi stack export | stateinfo [-type bench:index:Item] [-frames]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
)

// export is the part of `pulumi stack export` stateinfo reads.
type export struct {
	Deployment struct {
		Resources []struct {
			Type       string `json:"type"`
			StackTrace []struct {
				SourcePosition string `json:"sourcePosition"`
			} `json:"stackTrace"`
		} `json:"resources"`
	} `json:"deployment"`
}

func main() {
	log.SetPrefix("stateinfo: ")
	log.SetFlags(0)
	typ := flag.String("type", "bench:index:Item", "the resource type to report on")
	frames := flag.Bool("frames", false, "print the first resource's frames")
	flag.Parse()

	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		log.Fatal(err)
	}
	var st export
	if err := json.Unmarshal(data, &st); err != nil {
		log.Fatalf("reading the state: %v", err)
	}
	n, lo, hi := 0, 0, 0
	for _, r := range st.Deployment.Resources {
		if r.Type != *typ {
			continue
		}
		d := len(r.StackTrace)
		if n == 0 || d < lo {
			lo = d
		}
		if d > hi {
			hi = d
		}
		if n == 0 && *frames {
			for _, f := range r.StackTrace {
				fmt.Printf("# %s\n", f.SourcePosition)
			}
		}
		n++
	}
	if n == 0 {
		log.Fatalf("no resource of type %s in the state", *typ)
	}
	fmt.Println(n, lo, hi)
}
