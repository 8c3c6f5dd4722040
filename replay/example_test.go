package replay_test

import (
	"fmt"
	"os"
	"strings"

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
		for _, c := range call.Changes(replay.HideSecrets) {
			fmt.Printf("   %s: %q -> %s\n", c.Path, c.Old, c.New)
		}
	}
	// Output:
	// 1. resource transform RegisterStackTransform of pet: changed
	//    properties.prefix: "" -> "tx"
}

// Scrub replaces the configuration and every secret, here a secret input of
// a resource, and every configuration value wherever it appears, here a
// region, with placeholders numbered by first appearance.
func ExampleScrub() {
	log := `{"method":"/pulumirpc.LanguageRuntime/Run","request":{"project":"shop","stack":"dev","config":{"shop:dbPassword":"hunter2","shop:region":"eu-west-1"},"configSecretKeys":["shop:dbPassword"]},"progress":"request_started"}
{"method":"/pulumirpc.ResourceMonitor/RegisterResource","request":{"type":"db:index:User","name":"app","object":{"password":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","value":"hunter2"},"region":"eu-west-1"}},"metadata":{"mode":"server"},"progress":"request_started"}
`
	if err := replay.Scrub(os.Stdout, strings.NewReader(log)); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"method":"/pulumirpc.LanguageRuntime/Run","progress":"request_started","request":{"config":{"shop:dbPassword":"[secret 1]","shop:region":"[config 1]"},"configSecretKeys":["shop:dbPassword"],"project":"shop","stack":"dev"}}
	// {"metadata":{"mode":"server"},"method":"/pulumirpc.ResourceMonitor/RegisterResource","progress":"request_started","request":{"name":"app","object":{"password":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","value":"[secret 1]"},"region":"[config 1]"},"type":"db:index:User"}}
}
