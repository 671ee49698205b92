package coordination_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spate-go/coordination"
)

// TestExportedIdentifiersAreDocumented parses every non-internal package of the
// module and fails naming each exported identifier without a doc comment
// (staticcheck does not flag missing docs).
func TestExportedIdentifiersAreDocumented(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || name == "internal" || name == "testdata" || name == "examples" || name == "bench") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, missing := range undocumented(f) {
			t.Errorf("%s: exported %s has no doc comment", path, missing)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDocsCodeCompiles writes the Go blocks of each guide in docs/ into a
// package of its own and vets and tests it, as TestReadmeCodeCompiles does
// for the README, so the guides cannot drift from the API either; each
// guide's program stands alone, as a user copies it.
func TestDocsCodeCompiles(t *testing.T) {
	guides, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	withCode := 0
	for _, g := range guides {
		text, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(text, []byte("```go\n")) {
			continue
		}
		withCode++
		t.Run(filepath.Base(g), func(t *testing.T) { checkGoBlocks(t, 1, g) })
	}
	if withCode < 7 {
		t.Errorf("%d guides in docs/ have Go blocks, want at least 7", withCode)
	}
}

// TestDocsConfigTableListsEveryField fails naming each coordination.Config
// field that has no row in the configuration table of docs/config.md.
func TestDocsConfigTableListsEveryField(t *testing.T) {
	guide, err := os.ReadFile("docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeOf(coordination.Config{})
	for i := range typ.NumField() {
		if row := "\n| `" + typ.Field(i).Name + "` |"; !strings.Contains(string(guide), row) {
			t.Errorf("docs/config.md has no row for Config.%s in its configuration table; add one (default, meaning and rule)", typ.Field(i).Name)
		}
	}
}

func undocumented(f *ast.File) []string {
	var out []string
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || d.Doc != nil {
				continue
			}
			if d.Recv != nil && !exportedReceiver(d.Recv) {
				continue
			}
			out = append(out, "func "+d.Name.Name)
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() && d.Doc == nil && s.Doc == nil {
						out = append(out, "type "+s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() && d.Doc == nil && s.Doc == nil && s.Comment == nil {
							out = append(out, n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

func exportedReceiver(recv *ast.FieldList) bool {
	if len(recv.List) == 0 {
		return false
	}
	t := recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return false
		}
	}
}
