package driver_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// notAReader is a program passing driver.Run a source with every Source
// method but none of the Reader ones.
const notAReader = `package main

import (
	"context"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
)

type onlySource struct{ driver.SourceDefaults }

func (onlySource) OpenSplit(driver.Opening) error { return nil }
func (onlySource) EncodeCommit(coordination.SplitID, int64) (coordination.SplitProgress, error) {
	return coordination.SplitProgress{}, nil
}
func (onlySource) Sweep(coordination.SplitID) (*coordination.SplitProgress, error) { return nil, nil }
func (onlySource) CloseSplit(coordination.SplitID)                                  {}

func main() {
	var c coordination.Coordinator
	_ = driver.Run(context.Background(), c, onlySource{})
}
`

// TestRunWithoutReaderMethodsDoesNotCompile builds a program that passes
// driver.Run a Source lacking the Reader methods: the compiler must refuse
// it and name the missing method, so the mistake never reaches run time.
func TestRunWithoutReaderMethodsDoesNotCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program with the go command")
	}
	dir, err := os.MkdirTemp("..", ".sourcereader_check_") // inside the module, ignored by ./...
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(notAReader), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "go", "vet", "./"+filepath.Base(dir))
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("a source without StartLanes, StopLanes and Acked compiled as driver.Run's argument")
	}
	for _, want := range []string{"does not implement driver.SourceReader", "missing method"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("compile error lacks %q:\n%s", want, out)
		}
	}
}
