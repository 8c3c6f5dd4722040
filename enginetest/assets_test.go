// These tests check the simulator's own asset and archive hashes against
// the Pulumi SDK's: the SDK is the oracle here, never the implementation.

package enginetest

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdkresource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/archive"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/asset"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// sdkWire is the wire form the SDK (and so the engine) gives an asset or
// archive whose hashes it has computed.
func sdkWire(tb testing.TB, v any) *structpb.Value {
	tb.Helper()
	var pv sdkresource.PropertyValue
	switch v := v.(type) {
	case *asset.Asset:
		pv = sdkresource.NewProperty(v)
	case *archive.Archive:
		pv = sdkresource.NewProperty(v)
	default:
		tb.Fatalf("not an asset or archive: %T", v)
	}
	out, err := plugin.MarshalPropertyValue("x", pv, plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// withoutHashes returns a copy of a wire asset or archive with every hash
// removed, at every depth, as a transform may leave it.
func withoutHashes(v *structpb.Value) *structpb.Value {
	v = proto.Clone(v).(*structpb.Value)
	var strip func(*structpb.Value)
	strip = func(v *structpb.Value) {
		f := v.GetStructValue().GetFields()
		delete(f, "hash")
		for _, m := range f["assets"].GetStructValue().GetFields() {
			strip(m)
		}
	}
	strip(v)
	return v
}

// checkAgainstSDK clears every hash of the SDK's wire form of v, lets the
// simulator compute them again, and wants the SDK's wire form back.
func checkAgainstSDK(t *testing.T, name string, v any) {
	t.Helper()
	want := sdkWire(t, v)
	got, err := withAssetHash(name, withoutHashes(want))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !proto.Equal(want, got) {
		t.Errorf("%s: simulator's hashes differ from the SDK's:\nSDK:       %s\nsimulator: %s", name, protojson.Format(want), protojson.Format(got))
	}
}

// must returns v, or fails the test with err; call it as must(f())(tb).
func must[T any](v T, err error) func(testing.TB) T {
	return func(tb testing.TB) T {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return v
	}
}

func writeFile(tb testing.TB, p string, data string) string {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// writeTar writes files (name, contents, in order) and a directory entry
// as a tar file, gzipped when the name says so.
func writeTar(tb testing.TB, p string, files [][2]string) string {
	tb.Helper()
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var w io.Writer = f
	var gz *gzip.Writer
	if strings.HasSuffix(p, "gz") {
		gz = gzip.NewWriter(f)
		w = gz
	}
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: "dir/", Typeflag: tar.TypeDir, Mode: 0o700}); err != nil {
		tb.Fatal(err)
	}
	for _, nf := range files {
		if err := tw.WriteHeader(&tar.Header{Name: nf[0], Mode: 0o644, Size: int64(len(nf[1]))}); err != nil {
			tb.Fatal(err)
		}
		if _, err := tw.Write([]byte(nf[1])); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	if gz != nil {
		if err := gz.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	return p
}

func writeZip(tb testing.TB, p string, files [][2]string) string {
	tb.Helper()
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	if _, err := zw.Create("dir/"); err != nil {
		tb.Fatal(err)
	}
	for _, nf := range files {
		w, err := zw.Create(nf[0])
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := w.Write([]byte(nf[1])); err != nil {
			tb.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return p
}

func TestAssetHashesMatchTheSDK(t *testing.T) {
	dir := t.TempDir()
	text := func(s string) *asset.Asset { return must(asset.FromText(s))(t) }
	file := writeFile(t, filepath.Join(dir, "file.txt"), "contents of a file\n")
	wd := must(os.Getwd())(t)
	relFile := must(filepath.Rel(wd, file))(t)

	tree := filepath.Join(dir, "tree")
	writeFile(t, filepath.Join(tree, "b.txt"), "b")
	writeFile(t, filepath.Join(tree, "a", "z.txt"), "z")
	writeFile(t, filepath.Join(tree, "a", "y", "x.txt"), strings.Repeat("x", 1500))
	writeFile(t, filepath.Join(tree, ".pulumi", "skipped"), "left out")
	writeFile(t, filepath.Join(tree, "a", ".pulumi"), "left out too")
	if err := os.Symlink(filepath.Join(tree, "b.txt"), filepath.Join(tree, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(tree, "a"), filepath.Join(tree, "dirlink")); err != nil {
		t.Fatal(err)
	}
	entries := [][2]string{{"one.txt", "1"}, {"dir/two.txt", "22"}, {"./dir/../three", "333"}}
	tarFile := writeTar(t, filepath.Join(dir, "a.tar"), entries)
	tgzFile := writeTar(t, filepath.Join(dir, "a.tgz"), entries)
	targzFile := writeTar(t, filepath.Join(dir, "a.tar.gz"), entries)
	zipFile := writeZip(t, filepath.Join(dir, "a.zip"), entries)
	jarFile := writeZip(t, filepath.Join(dir, "a.jar"), entries)

	assets := func(m map[string]any) *archive.Archive { return must(archive.FromAssets(m))(t) }
	fromPath := func(p string) *archive.Archive { return must(archive.FromPath(p))(t) }
	long := strings.Repeat("long-name/", 12) + "file"
	cases := map[string]any{
		"hello":         text("hello world"),
		"empty text":    text(""),
		"unicode text":  text("héllo, 世界 \x00 ☃"),
		"path asset":    must(asset.FromPath(file))(t),
		"relative path": must(asset.FromPath(relFile))(t),
		"file URI":      must(asset.FromURI("file://" + file))(t),
		"hello archive": assets(map[string]any{"file.txt": text("hello world")}),
		"empty archive": assets(nil),
		"nested": assets(map[string]any{
			"b":      text("b"),
			"a":      assets(map[string]any{"x": text("x"), "y/z": text("yz"), "../up": text("up")}),
			"a/x":    text("shadowed by the member of a"),
			"./dot":  text("dot"),
			long:     text("a name too long for a plain tar header"),
			"é/ü":    text("not ascii"),
			"path":   must(asset.FromPath(file))(t),
			"tree":   fromPath(tree),
			"tar":    fromPath(tarFile),
			"zipped": fromPath(zipFile),
			"empty":  assets(nil),
		}),
		"directory":        fromPath(tree),
		"tar file":         fromPath(tarFile),
		"tgz file":         fromPath(tgzFile),
		"tar.gz file":      fromPath(targzFile),
		"zip file":         fromPath(zipFile),
		"jar file":         fromPath(jarFile),
		"file URI archive": must(archive.FromURI("file://" + tarFile))(t),
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range cases {
			if !yield(k) {
				return
			}
		}
	}) {
		checkAgainstSDK(t, name, cases[name])
	}

	// The engine's hash of "hello world", as a literal, so that this test
	// does not only compare two implementations with each other.
	got, err := withAssetHash("x", withoutHashes(sdkWire(t, cases["hello"])))
	if err != nil || got.GetStructValue().GetFields()["hash"].GetStringValue() != helloHash {
		t.Errorf("hello world hashes to %v (%v), want %s", got, err, helloHash)
	}
}

// randomTree builds a random asset or archive (text and path assets, maps
// of members, directories and archive files) with the SDK.
type randomTree struct {
	t   *testing.T
	r   *rand.Rand
	dir string
	n   int
}

func (g *randomTree) text() string {
	alphabet := []rune("ab\n\x00é☃ ")
	n := g.r.IntN(40)
	if g.r.IntN(10) == 0 {
		n = 600 + g.r.IntN(2000)
	}
	var b strings.Builder
	for range n {
		b.WriteRune(alphabet[g.r.IntN(len(alphabet))])
	}
	return b.String()
}

func (g *randomTree) name() string {
	parts := []string{"a", "b", "a/b", "./a", "a/../b", "c d", "ü", "x/y/z", strings.Repeat("n", 120)}
	return parts[g.r.IntN(len(parts))]
}

func (g *randomTree) fresh() string {
	g.n++
	return filepath.Join(g.dir, fmt.Sprint(g.n))
}

func (g *randomTree) asset() *asset.Asset {
	if g.r.IntN(3) == 0 {
		return must(asset.FromPath(writeFile(g.t, g.fresh(), g.text())))(g.t)
	}
	return must(asset.FromText(g.text()))(g.t)
}

func (g *randomTree) files() [][2]string {
	var fs [][2]string
	for range g.r.IntN(4) {
		fs = append(fs, [2]string{fmt.Sprintf("d%d/f%d", g.r.IntN(2), g.r.IntN(3)), g.text()})
	}
	return fs
}

func (g *randomTree) archive(depth int) *archive.Archive {
	switch g.r.IntN(6) {
	case 0:
		root := g.fresh()
		if err := os.MkdirAll(root, 0o700); err != nil {
			g.t.Fatal(err)
		}
		for _, f := range g.files() {
			writeFile(g.t, filepath.Join(root, f[0]), f[1])
		}
		return must(archive.FromPath(root))(g.t)
	case 1:
		return must(archive.FromPath(writeTar(g.t, g.fresh()+".tgz", g.files())))(g.t)
	case 2:
		return must(archive.FromPath(writeZip(g.t, g.fresh()+".zip", g.files())))(g.t)
	}
	members := map[string]any{}
	for range g.r.IntN(5) {
		if depth > 0 && g.r.IntN(3) == 0 {
			members[g.name()] = g.archive(depth - 1)
		} else {
			members[g.name()] = g.asset()
		}
	}
	return must(archive.FromAssets(members))(g.t)
}

func TestRandomAssetHashesMatchTheSDK(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	g := &randomTree{t: t, r: rand.New(rand.NewPCG(seed, 11)), dir: t.TempDir()}
	for i := range 200 {
		if i%4 == 0 {
			checkAgainstSDK(t, fmt.Sprintf("random asset %d", i), g.asset())
		} else {
			checkAgainstSDK(t, fmt.Sprintf("random archive %d", i), g.archive(3))
		}
	}
}

func wire(fields map[string]any) *structpb.Value {
	v, err := structpb.NewValue(fields)
	if err != nil {
		panic(err)
	}
	return v
}

// Hashes that are there are kept; what only the network could provide is
// not fetched, and its hash stays empty.
func TestAssetHashesKeptAndNothingFetched(t *testing.T) {
	t.Parallel()
	const someHash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	asAsset := func(f map[string]any) *structpb.Value { f[sigKey] = assetSig; return wire(f) }
	asArchive := func(f map[string]any) *structpb.Value { f[sigKey] = archiveSig; return wire(f) }
	for name, c := range map[string]struct {
		in   *structpb.Value
		want string
	}{
		"wrong hash kept":         {asAsset(map[string]any{"text": "hello world", "hash": someHash}), someHash},
		"placeholder kept":        {asAsset(map[string]any{"hash": someHash}), someHash},
		"http asset":              {asAsset(map[string]any{"uri": "http://example.invalid/a.txt"}), ""},
		"http asset with hash":    {asAsset(map[string]any{"uri": "https://example.invalid/a.txt", "hash": someHash}), someHash},
		"http archive":            {asArchive(map[string]any{"uri": "https://example.invalid/a.zip"}), ""},
		"archive with http asset": {asArchive(map[string]any{"assets": map[string]any{"a": map[string]any{sigKey: assetSig, "uri": "http://example.invalid/a"}}}), ""},
	} {
		got, err := withAssetHash(name, c.in)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if h := got.GetStructValue().GetFields()["hash"].GetStringValue(); h != c.want {
			t.Errorf("%s: hash %q, want %q", name, h, c.want)
		}
	}
}

func TestMalformedAssetsFailClearly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := writeFile(t, filepath.Join(dir, "plain.txt"), "not an archive")
	asAsset := func(f map[string]any) *structpb.Value { f[sigKey] = assetSig; return wire(f) }
	asArchive := func(f map[string]any) *structpb.Value { f[sigKey] = archiveSig; return wire(f) }
	for name, c := range map[string]struct {
		in   *structpb.Value
		want string
	}{
		"text a number":        {asAsset(map[string]any{"text": 42.0}), "malformed asset for \"text a number\": text is a number"},
		"unknown path":         {asAsset(map[string]any{"path": unknownSentinel}), "path is unknown"},
		"missing file":         {asAsset(map[string]any{"path": filepath.Join(dir, "nope")}), "failed to compute asset hash"},
		"directory asset":      {asAsset(map[string]any{"path": dir}), "is a directory"},
		"odd scheme":           {asAsset(map[string]any{"uri": "s3://bucket/key"}), "unsupported URI scheme \"s3\""},
		"remote file URI":      {asAsset(map[string]any{"uri": "file://elsewhere/etc/passwd"}), "only localhost"},
		"member not an asset":  {asArchive(map[string]any{"assets": map[string]any{"m": "text"}}), "archive member \"m\" is a string"},
		"assets not an object": {asArchive(map[string]any{"assets": []any{"x"}}), "assets is a list"},
		"bad member":           {asArchive(map[string]any{"assets": map[string]any{"m": map[string]any{sigKey: assetSig, "text": true}}}), "text is a bool"},
		"neither":              {asArchive(map[string]any{"path": plain}), "neither an archive file"},
		"missing archive":      {asArchive(map[string]any{"path": filepath.Join(dir, "nope.zip")}), "failed to compute archive hash"},
		"corrupt zip member": {asArchive(map[string]any{"assets": map[string]any{"m": map[string]any{
			sigKey: archiveSig, "path": writeFile(t, filepath.Join(dir, "bad.zip"), "PK no"),
		}}}), "cannot read zip archive"},
		"placeholder member": {asArchive(map[string]any{"assets": map[string]any{"m": map[string]any{
			sigKey: archiveSig, "hash": "0123",
		}}}), "neither members, path nor URI"},
	} {
		_, err := withAssetHash(name, c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
			t.Errorf("%s: error %v, want one naming the property and saying %q", name, err, c.want)
		}
	}
}

// The simulator speaks only the wire: it links neither the SDK's Go
// packages (only its protos) nor anything of this module but itself (the
// package enginetest and the packages under it).
func TestSimulatorLinksOnlyTheWire(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/langhost/callbacks/enginetest").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := strings.Fields(string(out))
	if !slices.Contains(pkgs, "github.com/langhost/callbacks/enginetest") {
		t.Fatalf("go list -deps did not list enginetest itself:\n%s", out)
	}
	for _, p := range pkgs {
		if strings.HasPrefix(p, "github.com/pulumi/pulumi/sdk/v3/go/") ||
			(strings.HasPrefix(p, "github.com/langhost/callbacks") && p != "github.com/langhost/callbacks/enginetest" &&
				!strings.HasPrefix(p, "github.com/langhost/callbacks/enginetest/")) {
			t.Errorf("enginetest depends on %s", p)
		}
	}
}
