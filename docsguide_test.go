package coordination_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestDocsGuidesCodeCompiles writes the Go file blocks of each guide in
// docs/ ("// file: name.go" first, as in the README) into a package of its
// own and vets it, so the guides cannot drift from the API.
func TestDocsGuidesCodeCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs with the go command")
	}
	guides, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, guide := range guides {
		text, err := os.ReadFile(guide)
		if err != nil {
			t.Fatal(err)
		}
		blocks := goBlock.FindAllSubmatch(text, -1)
		if len(blocks) == 0 {
			continue
		}
		dir, err := os.MkdirTemp(".", ".docs_check_") // inside the module, ignored by ./...
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		for _, b := range blocks {
			if err := os.WriteFile(filepath.Join(dir, string(b[1])), b[2], 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := exec.Command("go", "vet", "./"+filepath.Base(dir)).CombinedOutput(); err != nil {
			t.Errorf("%s: its Go code does not compile: %v\n%s", guide, err, out)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no guide in docs/ has a Go file block; the test checks nothing")
	}
}
