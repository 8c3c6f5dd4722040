package replay

import (
	"os"
	"strings"
	"testing"
)

// TestReplaySkipsACallNeverAnswered cuts a recorded log after the
// request_started entry of its last callback call: Run replays the others,
// does not fail for the one the recording never answered, and says so.
func TestReplaySkipsACallNeverAnswered(t *testing.T) {
	log := recordLog(t, testInfo, testProgram(recordedWith), testScript())
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	cut := -1
	for i, l := range lines {
		if strings.Contains(l, `"`+invokeMethod+`"`) && strings.Contains(l, `"request_started"`) {
			cut = i
		}
	}
	if cut < 0 {
		t.Fatal("the recorded log has no request_started of a callback call")
	}
	if err := os.WriteFile(log, []byte(strings.Join(lines[:cut+1], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	ft := &fakeT{TB: t}
	Run(ft, log, testProgram(recordedWith))
	if len(ft.errors) > 0 {
		t.Errorf("a log whose last call was never answered fails the replay:\n%s", ft.report())
	}
	said := false
	for _, l := range ft.logs {
		said = said || strings.Contains(l, "was never answered in the recording: not replayed")
	}
	if !said {
		t.Errorf("Run does not say that a call was never answered:\n%s", ft.report())
	}
}
