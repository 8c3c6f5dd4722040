package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// recordedUp is the log examples/replay keeps, which replay's update mode
// rewrites: the stack transform gives "web" the team "infra".
var recordedUp = filepath.Join("..", "..", "examples", "replay", "testdata", "up.jsonl")

// withTeam is a gRPC log with the team the stack transform answered for the
// resource name changed to team, as CALLBACKS_REPLAY_UPDATE=1 rewrites a
// recorded answer: the payload re-encoded, the rest of the line as it was.
func withTeam(tb testing.TB, log []byte, name, team string) []byte {
	tb.Helper()
	var out bytes.Buffer
	changed := 0
	for line := range bytes.Lines(log) {
		var e struct {
			Method  string
			Request struct{ Request []byte }
			Resp    struct{ Response []byte } `json:"response"`
		}
		if json.Unmarshal(line, &e) != nil || e.Method != "/pulumirpc.Callbacks/Invoke" || len(e.Resp.Response) == 0 {
			out.Write(line)
			continue
		}
		var req pulumirpc.TransformRequest
		var res pulumirpc.TransformResponse
		if proto.Unmarshal(e.Request.Request, &req) != nil || req.GetName() != name ||
			proto.Unmarshal(e.Resp.Response, &res) != nil {
			out.Write(line)
			continue
		}
		keepers := res.GetProperties().GetFields()["keepers"].GetStructValue()
		if keepers == nil || keepers.Fields["team"] == nil {
			out.Write(line)
			continue
		}
		keepers.Fields["team"] = structpb.NewStringValue(team)
		b, err := proto.Marshal(&res)
		if err != nil {
			tb.Fatal(err)
		}
		old := base64.StdEncoding.EncodeToString(e.Resp.Response)
		out.Write(bytes.Replace(line, []byte(old), []byte(base64.StdEncoding.EncodeToString(b)), 1))
		changed++
	}
	if changed == 0 {
		tb.Fatalf("no transform answered a team for %s", name)
	}
	return out.Bytes()
}

// git runs git in dir, with no configuration but the repository's, and
// returns its output.
func git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestGitDiffDriver sets callbacklog show up as git's textconv for recorded
// logs, as the package comment says, changes a committed log as replay's
// update mode does, and checks that git diff shows the account's change,
// and only it, where it would show two lines of base64.
func TestGitDiffDriver(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	bin := builds.Program(t, ".")
	repo := t.TempDir()
	git(t, repo, "init", "-q")
	// The lines the package comment gives.
	if err := os.WriteFile(filepath.Join(repo, ".gitattributes"), []byte("**/testdata/*.jsonl diff=callbacklog\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "config", "diff.callbacklog.textconv", bin+" show")

	recorded := readTestFile(t, recordedUp)
	log := filepath.Join(repo, "testdata", "up.jsonl")
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, withTeam(t, recorded, "web", "platform"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-q", "-m", "recorded")
	if err := os.WriteFile(log, recorded, 0o644); err != nil {
		t.Fatal(err)
	}

	check := func(what, out string) {
		t.Helper()
		var minus, plus []string
		for _, l := range strings.Split(out, "\n") {
			switch {
			case strings.HasPrefix(l, "---"), strings.HasPrefix(l, "+++"):
			case strings.HasPrefix(l, "-"):
				minus = append(minus, l)
			case strings.HasPrefix(l, "+"):
				plus = append(plus, l)
			}
		}
		wantMinus := regexp.MustCompile(`^-\s+properties\.keepers  \(absent\) → \{"team": "platform"\}$`)
		wantPlus := regexp.MustCompile(`^\+\s+properties\.keepers  \(absent\) → \{"team": "infra"\}$`)
		if len(minus) != 1 || len(plus) != 1 || !wantMinus.MatchString(minus[0]) || !wantPlus.MatchString(plus[0]) {
			t.Errorf("%s shows, want one line of the account's change from \"platform\" to \"infra\":\n%s", what, out)
		}
		if regexp.MustCompile(`[A-Za-z0-9+/]{40,}`).MatchString(out) {
			t.Errorf("%s shows base64:\n%s", what, out)
		}
	}
	// The working tree's log against the committed one, then two commits:
	// git gives the textconv the working tree's file, or a temporary file
	// for each side.
	check("git diff", git(t, repo, "diff"))
	git(t, repo, "commit", "-q", "-a", "-m", "updated")
	check("git show", git(t, repo, "show", "--format="))
	check("git diff HEAD~ HEAD", git(t, repo, "diff", "HEAD~", "HEAD"))
}
