package enginetest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxExported is the most top-level names the package may export: what a
// test holds, not the engine's internals.
const maxExported = 60

// exportedNames parses the package's non-test files in dir and returns its
// exported top-level names (types, functions, variables and constants)
// and the exported declarations, methods of exported types included, that
// have no doc comment.
func exportedNames(t *testing.T, dir string) (names, undocumented []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, entry := range entries {
		if !strings.HasSuffix(entry.Name(), ".go") || strings.HasSuffix(entry.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, entry.Name()), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				name, ok := funcName(d)
				if !ok {
					continue
				}
				if d.Recv == nil {
					names = append(names, name)
				}
				if d.Doc == nil {
					undocumented = append(undocumented, name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ids, doc := specNames(spec)
					if doc == nil {
						doc = d.Doc
					}
					for _, id := range ids {
						if !id.IsExported() {
							continue
						}
						names = append(names, id.Name)
						if doc == nil {
							undocumented = append(undocumented, id.Name)
						}
					}
				}
			}
		}
	}
	return names, undocumented
}

// funcName names an exported function, or an exported method of an
// exported type as "Type.Method"; ok is false for anything else.
func funcName(d *ast.FuncDecl) (name string, ok bool) {
	if !d.Name.IsExported() {
		return "", false
	}
	if d.Recv == nil {
		return d.Name.Name, true
	}
	recv := d.Recv.List[0].Type
	if star, isStar := recv.(*ast.StarExpr); isStar {
		recv = star.X
	}
	id, isIdent := recv.(*ast.Ident)
	if !isIdent || !id.IsExported() {
		return "", false
	}
	return id.Name + "." + d.Name.Name, true
}

// specNames returns the names a type, variable or constant spec declares
// and its own doc comment, if it has one.
func specNames(spec ast.Spec) ([]*ast.Ident, *ast.CommentGroup) {
	switch s := spec.(type) {
	case *ast.TypeSpec:
		return []*ast.Ident{s.Name}, s.Doc
	case *ast.ValueSpec:
		return s.Names, s.Doc
	}
	return nil, nil
}

// The package exports what a test holds, every name with its doc comment.
func TestExportedNamesAreFewAndDocumented(t *testing.T) {
	t.Parallel()
	names, undocumented := exportedNames(t, ".")
	if len(names) == 0 {
		t.Fatal("found no exported name: the parse missed the package")
	}
	if len(names) > maxExported {
		t.Errorf("the package exports %d top-level names, more than %d: %v", len(names), maxExported, names)
	}
	for _, name := range undocumented {
		t.Errorf("%s is exported without a doc comment", name)
	}
}
