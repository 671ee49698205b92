package actors

import (
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/spate-go/coordination"

// actorPackages are the actors of one worker, one package each
// (docs/architecture.md, "The actors of one worker").
var actorPackages = []string{"commitwriter", "leader", "lease", "revoke", "splitwriter", "watch"}

// TestNoActorPackageImportsAnother checks the rooms of the actors: an
// actor's package (its tests included) imports no other actor's package,
// and of this module only the seam, the messages (public and wire), the store contract, the
// pure rules, the record-carrying messages and what every actor shares.
// The shared packages import no actor's package either, so no path leads
// from one actor's package to another's.
func TestNoActorPackageImportsAnother(t *testing.T) {
	allowed := []string{
		module, module + "/messages", module + "/actors/internal/wire", module + "/store", module + "/internal/protocol",
		module + "/internal/recordmsg", module + "/actors/internal/worker",
	}
	testOnly := []string{module + "/actors/internal/workertest", module + "/store/memstore"}
	dirs, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, d := range dirs {
		if d.IsDir() && d.Name() != "internal" && d.Name() != "testdata" {
			found = append(found, d.Name())
		}
	}
	if !slices.Equal(found, actorPackages) {
		t.Fatalf("packages under actors/: %v, want %v (update actorPackages and docs/architecture.md)", found, actorPackages)
	}
	check := func(dir string, imports []string, extra []string) {
		for _, imp := range imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			if !slices.Contains(allowed, imp) && !slices.Contains(extra, imp) {
				t.Errorf("actors/%s imports %s; an actor reaches another only by message", dir, imp)
			}
		}
	}
	for _, dir := range append(slices.Clone(actorPackages), "internal/wire", "internal/worker", "internal/workertest") {
		p, err := build.ImportDir(filepath.FromSlash(dir), 0)
		if err != nil {
			t.Fatalf("actors/%s: %v", dir, err)
		}
		var extra []string
		if dir == "internal/workertest" { // test support: a store to run on
			extra = []string{module + "/store/memstore"}
		}
		check(dir, p.Imports, extra)
		check(dir, append(p.TestImports, p.XTestImports...), testOnly)
	}
}
