package coordination_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// examplesStillOnInternal lists the example directories allowed to import
// internal/ packages for now: examples/tablecopy is being replaced by a
// PostgreSQL example on the lane kit (issue #36). Remove its entry when it
// goes; the test fails on an entry whose directory no longer exists.
var examplesStillOnInternal = map[string]bool{
	"examples/tablecopy": true,
}

// TestExamplesImportNoInternalPackage parses every Go file under examples/,
// tests included: an example is copied by users, who cannot import this
// module's internal/ packages, so what it needs must be public or its own.
func TestExamplesImportNoInternalPackage(t *testing.T) {
	const internal = "github.com/spate-go/coordination/internal"
	for dir := range examplesStillOnInternal {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s is excused from this test but is gone: remove it from examplesStillOnInternal", dir)
		}
	}
	checked := 0
	err := filepath.WalkDir("examples", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && examplesStillOnInternal[filepath.ToSlash(path)] {
			return filepath.SkipDir
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
