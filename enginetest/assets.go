package enginetest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

// The engine keeps a hash on every asset and archive it stores: the
// SHA-256 of an asset's bytes; for an archive file (.tar, .tgz, .tar.gz,
// .zip, .jar) the SHA-256 of the file; for any other archive (a map of
// assets and archives, or a directory) the SHA-256 of the tar stream that
// holds its files in order, each under a header with only its name, mode
// 0600 and size. The simulator computes these hashes itself from the wire
// form, so that it shares no code with the program's property codec.

const (
	// emptyTextHash is the hash of no bytes: the hash of an empty text asset.
	emptyTextHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	// emptyArchiveHash is the hash of a tar stream with no files.
	emptyArchiveHash = "5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef"
)

// errRemote marks contents that only the network could provide; the
// simulator never fetches them and leaves the hash that needs them empty.
var errRemote = errors.New("contents are behind an http(s) URI")

// wireAsset is an asset as the wire carries it.
type wireAsset struct{ hash, text, path, uri string }

// wireArchive is an archive as the wire carries it: exactly one of path,
// uri and members (non-nil for a map of assets and archives) is set.
type wireArchive struct {
	hash, path, uri string
	members         map[string]any // *wireAsset or *wireArchive
}

// withAssetHash returns an asset or archive, in the engine's wire form,
// with its hash and the hashes of its members computed where they are
// missing (a transform may have cleared them). Hashes that need the
// network stay empty.
func withAssetHash(key string, v *structpb.Value) (*structpb.Value, error) {
	if signature(v) == assetSig {
		a, err := parseAsset(v)
		if err != nil {
			return nil, fmt.Errorf("malformed asset for %q: %w", key, err)
		}
		if err := a.ensureHash(); err != nil {
			return nil, fmt.Errorf("failed to compute asset hash for %q: %w", key, err)
		}
		return a.value(), nil
	}
	a, err := parseArchive(v)
	if err != nil {
		return nil, fmt.Errorf("malformed archive for %q: %w", key, err)
	}
	if err := a.ensureHash(); err != nil {
		return nil, fmt.Errorf("failed to compute archive hash for %q: %w", key, err)
	}
	return a.value(), nil
}

func kindName(v *structpb.Value) string {
	switch k := v.GetKind().(type) {
	case nil, *structpb.Value_NullValue:
		return "null"
	case *structpb.Value_BoolValue:
		return "a bool"
	case *structpb.Value_NumberValue:
		return "a number"
	case *structpb.Value_StringValue:
		if k.StringValue == unknownSentinel {
			return "unknown"
		}
		return "a string"
	case *structpb.Value_ListValue:
		return "a list"
	default:
		if sig := signature(v); sig != "" {
			return "a special value (" + sig + ")"
		}
		return "an object"
	}
}

// stringField reads an optional string field; unknowns, secrets and any
// other kind are refused, as the engine refuses them.
func stringField(fields map[string]*structpb.Value, name string) (string, error) {
	v, ok := fields[name]
	if !ok {
		return "", nil
	}
	if s, ok := v.GetKind().(*structpb.Value_StringValue); ok && s.StringValue != unknownSentinel {
		return s.StringValue, nil
	}
	return "", fmt.Errorf("%s is %s, not a string", name, kindName(v))
}

func parseAsset(v *structpb.Value) (*wireAsset, error) {
	f := v.GetStructValue().GetFields()
	var a wireAsset
	for _, p := range []struct {
		name string
		to   *string
	}{{"hash", &a.hash}, {"text", &a.text}, {"path", &a.path}, {"uri", &a.uri}} {
		s, err := stringField(f, p.name)
		if err != nil {
			return nil, err
		}
		*p.to = s
	}
	return &a, nil
}

// parseArchive reads an archive the way the engine does: a non-empty path
// wins over a URI, which wins over members; an archive with none of them
// is an empty map of members.
func parseArchive(v *structpb.Value) (*wireArchive, error) {
	f := v.GetStructValue().GetFields()
	var a wireArchive
	var err error
	if a.hash, err = stringField(f, "hash"); err != nil {
		return nil, err
	}
	if a.path, err = stringField(f, "path"); err != nil || a.path != "" {
		return &a, err
	}
	if a.uri, err = stringField(f, "uri"); err != nil || a.uri != "" {
		return &a, err
	}
	a.members = map[string]any{}
	assets, ok := f["assets"]
	if !ok {
		return &a, nil
	}
	if assets.GetStructValue() == nil || signature(assets) != "" {
		return nil, fmt.Errorf("assets is %s, not an object", kindName(assets))
	}
	for name, m := range assets.GetStructValue().GetFields() {
		var err error
		switch signature(m) {
		case assetSig:
			a.members[name], err = parseAsset(m)
		case archiveSig:
			a.members[name], err = parseArchive(m)
		default:
			return nil, fmt.Errorf("archive member %q is %s, not an asset or archive", name, kindName(m))
		}
		if err != nil {
			return nil, fmt.Errorf("archive member %q: %w", name, err)
		}
	}
	return &a, nil
}

// value is the asset's wire form as the engine writes it: empty fields
// left out.
func (a *wireAsset) value() *structpb.Value {
	fields := map[string]*structpb.Value{}
	for name, s := range map[string]string{"hash": a.hash, "text": a.text, "path": a.path, "uri": a.uri} {
		if s != "" {
			fields[name] = structpb.NewStringValue(s)
		}
	}
	return sigObject(assetSig, fields)
}

func (a *wireArchive) value() *structpb.Value {
	fields := map[string]*structpb.Value{}
	for name, s := range map[string]string{"hash": a.hash, "path": a.path, "uri": a.uri} {
		if s != "" {
			fields[name] = structpb.NewStringValue(s)
		}
	}
	if a.members != nil {
		ms := make(map[string]*structpb.Value, len(a.members))
		for name, m := range a.members {
			switch m := m.(type) {
			case *wireAsset:
				ms[name] = m.value()
			case *wireArchive:
				ms[name] = m.value()
			}
		}
		fields["assets"] = structpb.NewStructValue(&structpb.Struct{Fields: ms})
	}
	return sigObject(archiveSig, fields)
}

// ensureHash sets a missing hash to the SHA-256 of the asset's bytes.
func (a *wireAsset) ensureHash() error {
	if a.hash != "" {
		return nil
	}
	sum, err := hashBlob(a.open())
	if errors.Is(err, errRemote) {
		return nil
	}
	if err != nil {
		return err
	}
	a.hash = sum
	return nil
}

func hashBlob(r io.ReadCloser, size int64, err error) (string, error) {
	if err != nil {
		return "", err
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return "", err
	}
	if n != size {
		return "", fmt.Errorf("read %d bytes where %d were expected", n, size)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// open returns the asset's bytes and their count. A path wins over a URI,
// which wins over the text; an asset with neither and a hash other than
// the empty text's is a placeholder whose bytes are not known.
func (a *wireAsset) open() (io.ReadCloser, int64, error) {
	switch {
	case a.path != "":
		return openFile(a.path)
	case a.uri != "":
		return openAssetURI(a.uri)
	case a.text != "" || a.hash == "" || a.hash == emptyTextHash:
		return io.NopCloser(strings.NewReader(a.text)), int64(len(a.text)), nil
	default:
		return nil, 0, errors.New("the asset has neither text, path nor URI")
	}
}

// absPath takes a relative path from the simulator's working directory,
// as the engine takes it from its own, and leaves an absolute one as it is.
func absPath(p string) (string, error) {
	if filepath.IsAbs(p) {
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return filepath.Join(wd, p), nil
}

// openFile opens a regular file.
func openFile(p string) (io.ReadCloser, int64, error) {
	p, err := absPath(p)
	if err != nil {
		return nil, 0, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot open asset file: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("cannot stat asset file: %w", err)
	}
	if info.IsDir() {
		f.Close()
		return nil, 0, fmt.Errorf("asset path %q is a directory; an archive can hold a directory", p)
	}
	return f, info.Size(), nil
}

// openAssetURI opens a file:// URI (on this host only) and refuses to
// fetch an http(s) one.
func openAssetURI(uri string) (io.ReadCloser, int64, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, 0, err
	}
	switch u.Scheme {
	case "http", "https":
		return nil, 0, errRemote
	case "file":
		if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, 0, fmt.Errorf("file URI %q has a user, a query or a fragment", uri)
		}
		if u.Host != "" && u.Host != "localhost" {
			return nil, 0, fmt.Errorf("file URI %q names host %q; only localhost is supported", uri, u.Host)
		}
		return openFile(u.Path)
	default:
		return nil, 0, fmt.Errorf("unsupported URI scheme %q", u.Scheme)
	}
}

// ensureHash sets the missing hashes of the archive's members, then its
// own: the hash of the archive file it names, or of the tar stream of its
// files.
func (a *wireArchive) ensureHash() error {
	for _, name := range slices.Sorted(mapKeys(a.members)) {
		var err error
		switch m := a.members[name].(type) {
		case *wireAsset:
			err = m.ensureHash()
		case *wireArchive:
			err = m.ensureHash()
		}
		if err != nil {
			return fmt.Errorf("archive member %q: %w", name, err)
		}
	}
	if a.hash != "" {
		return nil
	}
	h := sha256.New()
	err := a.writeSource(h)
	if errors.Is(err, errNotArchiveFile) {
		tw := tar.NewWriter(h)
		seen := map[string]bool{}
		err = a.each(func(name string, size int64, r io.Reader) error {
			return addToTar(tw, seen, name, size, r)
		})
		if err == nil {
			err = tw.Close()
		}
	}
	if errors.Is(err, errRemote) {
		return nil
	}
	if err != nil {
		return err
	}
	a.hash = hex.EncodeToString(h.Sum(nil))
	return nil
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

var errNotArchiveFile = errors.New("not an archive file")

// writeSource copies the archive file the archive names, or says there is
// none.
func (a *wireArchive) writeSource(w io.Writer) error {
	var rc io.ReadCloser
	var err error
	switch {
	case a.path != "":
		p, perr := absPath(a.path)
		if perr != nil {
			return perr
		}
		if archiveFormat(p) == "" {
			return errNotArchiveFile
		}
		rc, err = os.Open(p)
	case a.uri != "":
		u, perr := url.Parse(a.uri)
		if perr != nil || archiveFormat(u.Path) == "" {
			return errNotArchiveFile
		}
		rc, err = openArchiveURI(u)
	default:
		return errNotArchiveFile
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(w, rc)
	return err
}

// addToTar writes one file the way the engine does when it hashes an
// archive: a file met twice is written once, the first time.
func addToTar(tw *tar.Writer, seen map[string]bool, name string, size int64, r io.Reader) error {
	if seen[name] {
		return nil
	}
	seen[name] = true
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size}); err != nil {
		return err
	}
	n, err := io.Copy(tw, r)
	if err != nil {
		return fmt.Errorf("archive file %q: %w", name, err)
	}
	if n != size {
		return fmt.Errorf("archive file %q: read %d bytes where %d were expected", name, n, size)
	}
	return nil
}

type visitFunc func(name string, size int64, r io.Reader) error

// each calls visit for every file of the archive, in the engine's order:
// members by sorted name (an archive member's files under its name), a
// directory's files as filepath.Walk finds them, an archive file's entries
// as they are stored.
func (a *wireArchive) each(visit visitFunc) error {
	switch {
	case a.path != "":
		p, err := absPath(a.path)
		if err != nil {
			return err
		}
		if format := archiveFormat(p); format != "" {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			return eachEntry(f, format, visit)
		}
		return eachInDirectory(p, visit)
	case a.uri != "":
		u, err := url.Parse(a.uri)
		if err != nil {
			return err
		}
		format := archiveFormat(u.Path)
		if format == "" {
			return fmt.Errorf("archive URI %q does not name a recognized archive format", a.uri)
		}
		rc, err := openArchiveURI(u)
		if err != nil {
			return err
		}
		return eachEntry(rc, format, visit)
	}
	if len(a.members) == 0 && a.hash != "" && a.hash != emptyArchiveHash {
		return errors.New("the archive has neither members, path nor URI")
	}
	for _, name := range slices.Sorted(mapKeys(a.members)) {
		switch m := a.members[name].(type) {
		case *wireAsset:
			rc, size, err := m.open()
			if err != nil {
				return fmt.Errorf("archive member %q: %w", name, err)
			}
			err = visit(name, size, rc)
			rc.Close()
			if err != nil {
				return err
			}
		case *wireArchive:
			err := m.each(func(inner string, size int64, r io.Reader) error {
				return visit(path.Join(name, inner), size, r)
			})
			if err != nil {
				return fmt.Errorf("archive member %q: %w", name, err)
			}
		}
	}
	return nil
}

// eachInDirectory visits the regular files under dir (and the files that
// symbolic links name), leaving out .pulumi, named by their slash-separated
// path relative to dir.
func eachInDirectory(dir string, visit visitFunc) error {
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cannot read archive path: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("archive path %q is neither an archive file (.tar, .tgz, .tar.gz, .zip, .jar) nor a directory", dir)
	}
	var files []string
	err = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		switch {
		case err != nil:
			return err
		case fi.Name() == ".pulumi" && fi.IsDir():
			return filepath.SkipDir
		case fi.Name() == ".pulumi" || fi.IsDir():
			return nil
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Stat(p)
			if err != nil {
				return err
			}
			if target.IsDir() {
				return nil
			}
		}
		files = append(files, p)
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range files {
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rc, size, err := openFile(p)
		if err != nil {
			return err
		}
		err = visit(filepath.ToSlash(filepath.Clean(rel)), size, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// openArchiveURI opens a file:// URI and refuses to fetch an http(s) one.
func openArchiveURI(u *url.URL) (io.ReadCloser, error) {
	switch u.Scheme {
	case "http", "https":
		return nil, errRemote
	case "file":
		if u.Host != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("file URI %q has a host, a user, a query or a fragment", u)
		}
		return os.Open(u.Path)
	default:
		return nil, fmt.Errorf("unsupported URI scheme %q", u.Scheme)
	}
}

// archiveFormat names the archive format a file name's extension says, or
// returns "".
func archiveFormat(name string) string {
	for _, ext := range []string{".tar.gz", ".tgz", ".tar", ".zip", ".jar"} {
		if strings.HasSuffix(name, ext) {
			return ext
		}
	}
	return ""
}

// eachEntry visits the regular files of an archive file, skipping
// directories, and closes it.
func eachEntry(rc io.ReadCloser, format string, visit visitFunc) error {
	defer rc.Close()
	switch format {
	case ".zip", ".jar":
		return eachZipEntry(rc, visit)
	case ".tar.gz", ".tgz":
		gz, err := gzip.NewReader(rc)
		if err != nil {
			return err
		}
		return eachTarEntry(gz, visit)
	default:
		return eachTarEntry(rc, visit)
	}
}

func eachTarEntry(r io.Reader, visit visitFunc) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
		case tar.TypeReg:
			if err := visit(filepath.Clean(hdr.Name), hdr.Size, tr); err != nil {
				return err
			}
		default:
			return fmt.Errorf("tar entry %q has type %q; only files and directories are supported", hdr.Name, hdr.Typeflag)
		}
	}
}

func eachZipEntry(rc io.ReadCloser, visit visitFunc) error {
	var ra io.ReaderAt
	var size int64
	if f, ok := rc.(*os.File); ok {
		info, err := f.Stat()
		if err != nil {
			return err
		}
		ra, size = f, info.Size()
	} else {
		data, err := io.ReadAll(rc)
		if err != nil {
			return err
		}
		ra, size = bytes.NewReader(data), int64(len(data))
	}
	zr, err := zip.NewReader(ra, size)
	if err != nil {
		return fmt.Errorf("cannot read zip archive: %w", err)
	}
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			continue
		}
		if f.UncompressedSize64 > math.MaxInt64 {
			return fmt.Errorf("zip entry %q is too large", f.Name)
		}
		body, err := f.Open()
		if err != nil {
			return fmt.Errorf("cannot read zip entry %q: %w", f.Name, err)
		}
		err = visit(filepath.Clean(f.Name), int64(f.UncompressedSize64), body)
		body.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
