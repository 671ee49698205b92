package coordination_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// goBlock matches a README code block that is a whole Go file; its first line
// names the file ("// file: worker.go").
var goBlock = regexp.MustCompile("(?s)```go\n// file: ([a-z_]+\\.go)\n(.*?)```")

// TestReadmeCodeCompiles writes every Go block of README.md into one package
// and vets it (tests included), so the README cannot drift from the API.
func TestReadmeCodeCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program with the go command")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlock.FindAllSubmatch(readme, -1)
	if len(blocks) < 4 {
		t.Fatalf("README.md has %d Go file blocks, want at least 4", len(blocks))
	}
	dir, err := os.MkdirTemp(".", ".readme_check_") // inside the module, ignored by ./...
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, b := range blocks {
		if err := os.WriteFile(filepath.Join(dir, string(b[1])), b[2], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("go", "vet", "./"+filepath.Base(dir)).CombinedOutput()
	if err != nil {
		t.Fatalf("README code does not compile: %v\n%s", err, out)
	}
	out, err = exec.Command("go", "test", "-count=1", "./"+filepath.Base(dir)).CombinedOutput()
	if err != nil {
		t.Fatalf("README tests fail: %v\n%s", err, out)
	}
}
