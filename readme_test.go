package coordination_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// goBlock matches a Markdown code block that is a whole Go file; its first
// line names the file ("// file: worker.go").
var goBlock = regexp.MustCompile("(?s)```go\n// file: ([a-z_]+\\.go)\n(.*?)```")

// TestReadmeCodeCompiles writes every Go block of README.md into one package
// and vets and tests it, so the README cannot drift from the API.
func TestReadmeCodeCompiles(t *testing.T) {
	checkGoBlocks(t, 1, "README.md")
}

// checkGoBlocks writes the Go file blocks of the Markdown files into one
// package main, then vets it and runs its tests. Every Go block of the files
// must be a file block (so none escapes the check), no two may name the
// same file, and there must be at least min of them.
func checkGoBlocks(t *testing.T, min int, files ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a program with the go command")
	}
	named := map[string]string{} // file name -> the Markdown file that holds it
	var blocks [][][]byte
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		found := goBlock.FindAllSubmatch(text, -1)
		if all := bytes.Count(text, []byte("```go\n")); all != len(found) {
			t.Errorf("%s has %d Go blocks, %d of them Go files; begin every Go block with a line \"// file: name.go\" so that it is compiled", f, all, len(found))
		}
		for _, b := range found {
			if other, ok := named[string(b[1])]; ok {
				t.Errorf("%s and %s both have a Go block %s; give each block a file name of its own", other, f, b[1])
			}
			named[string(b[1])] = f
		}
		blocks = append(blocks, found...)
	}
	if len(blocks) < min {
		t.Fatalf("%v have %d Go file blocks, want at least %d", files, len(blocks), min)
	}
	if t.Failed() {
		return
	}
	dir, err := os.MkdirTemp(".", ".blocks_check_") // inside the module, ignored by ./...
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, b := range blocks {
		if err := os.WriteFile(filepath.Join(dir, string(b[1])), b[2], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pkg := "./" + filepath.Base(dir)
	if out, err := exec.Command("go", "vet", pkg).CombinedOutput(); err != nil {
		t.Fatalf("the Go blocks of %v do not compile: %v\n%s", files, err, out)
	}
	if out, err := exec.Command("go", "test", "-count=1", pkg).CombinedOutput(); err != nil {
		t.Fatalf("the tests in the Go blocks of %v fail: %v\n%s", files, err, out)
	}
}
