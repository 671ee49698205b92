package coordination_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestExamplesImportNoInternalPackage parses every Go file under examples/,
// tests included: an example is copied by users, who cannot import this
// module's internal/ packages, so what it needs must be public or its own.
func TestExamplesImportNoInternalPackage(t *testing.T) {
	const internal = "github.com/spate-go/coordination/internal"
	checked := 0
	err := filepath.WalkDir("examples", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == internal || strings.HasPrefix(p, internal+"/") {
				t.Errorf("%s imports %s: a user copying the example cannot; make what it needs public or copy it into the example", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no Go file found under examples/")
	}
}
