package coordination_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// anyGoBlock matches every Go code block of a document.
var anyGoBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// TestDocsCodeCompiles vets the Go blocks of every docs/*.md, each
// document's blocks as one package (README.md's convention: every block is
// a whole file whose first line names it, "// file: worker.go"), so the
// guides cannot drift from the API.
func TestDocsCodeCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs with the go command")
	}
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		all := anyGoBlock.FindAllSubmatch(text, -1)
		if len(all) == 0 {
			continue
		}
		files := goBlock.FindAllSubmatch(text, -1)
		if len(files) != len(all) {
			t.Errorf("%s: %d of its %d Go blocks are not whole files; start each with a line // file: name.go", doc, len(all)-len(files), len(all))
			continue
		}
		dir, err := os.MkdirTemp(".", ".docs_check_") // inside the module, ignored by ./...
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		for _, b := range files {
			if err := os.WriteFile(filepath.Join(dir, string(b[1])), b[2], 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := exec.Command("go", "vet", "./"+filepath.Base(dir)).CombinedOutput(); err != nil {
			t.Errorf("%s: its Go code does not compile: %v\n%s", doc, err, strings.ReplaceAll(string(out), filepath.Base(dir), doc))
		}
	}
}
