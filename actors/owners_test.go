package actors

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A fact of one worker has one owning actor (docs/architecture.md, "One
// owner per fact"); the others ask it, or are told exactly what they act on.
// The facts with a type of their own are checked here: a struct field of a
// fact's type outside its owner's package is a second copy of the fact.
// The copies still kept are listed with the reason, each to be removed by
// a later step of issue #40; the test fails on a new copy, and on a listed
// one that is gone (so the list only shrinks).

// fact is one fact of a worker, the types that hold it and its owner.
type fact struct {
	name  string
	types []string // worker's types that hold it
	owner string   // the owner's directory under actors/ ("." is the root's)
}

var facts = []fact{
	{name: "held tenancies", types: []string{"Tenancy"}, owner: "splitwriter"},
	{name: "split records", types: []string{"SplitEntry"}, owner: "splitwriter"},
	{name: "the job's phase", types: []string{"JobPhase"}, owner: "."},
	{name: "the assigned set", types: []string{"AssignedSet", "AssignmentRecord"}, owner: "splitwriter"},
	{name: "live members", types: []string{"LiveMembers"}, owner: "watch"}, // the others keep the snapshot it sent (TestOnlyTheWatchSnapshotsTheLiveMembers)
}

// knownCopies are the fields that still keep a copy of a fact outside its
// owner, as "dir.Type.field", with the fact they copy.
var knownCopies = map[string]string{
	"leader.leaderActor.phase": "the job's phase",  // copies fed by WatchesChanged and Retire
	"leader.assignCache.rec":   "the assigned set", // every member's published record, this worker's among them
}

// factFields returns every struct field of a fact's type in the non-test
// sources of actors/, as "dir|Type.field" → the fact.
func factFields(t *testing.T) map[string]string {
	t.Helper()
	of := map[string]string{}
	for _, f := range facts {
		for _, ty := range f.types {
			of[ty] = f.name
		}
	}
	found := map[string]string{}
	eachSource(t, func(_ *token.FileSet, path string, f *ast.File) {
		dir := filepath.ToSlash(filepath.Dir(path))
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range gd.Specs {
				ts, ok := s.(*ast.TypeSpec)
				if !ok {
					continue
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fl := range st.Fields.List {
					ast.Inspect(fl.Type, func(n ast.Node) bool {
						var name string
						switch n := n.(type) {
						case *ast.SelectorExpr:
							name = n.Sel.Name
						case *ast.Ident:
							name = n.Name
						}
						if fc := of[name]; fc != "" {
							for _, nm := range fl.Names {
								found[dir+"|"+ts.Name.Name+"."+nm.Name] = fc
							}
						}
						return true
					})
				}
			}
		}
	})
	return found
}

// eachSource calls fn with each non-test source file of actors/ and its
// packages, parsed.
func eachSource(t *testing.T, fn func(fset *token.FileSet, path string, f *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		fn(fset, path, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNoFactIsKeptOutsideItsOwner fails when a package other than a fact's
// owner declares a field of the fact's type, unless the copy is listed in
// knownCopies, and when a listed copy is gone.
func TestNoFactIsKeptOutsideItsOwner(t *testing.T) {
	owner := map[string]string{}
	for _, f := range facts {
		owner[f.name] = f.owner
	}
	found := factFields(t)
	var seen []string
	for field, fc := range found {
		dir, _, _ := strings.Cut(field, "|")
		field = strings.Replace(field, "|", ".", 1)
		if dir == owner[fc] || strings.HasPrefix(dir, "internal/") {
			continue // the owner's own, or the shared type's definition
		}
		if knownCopies[field] == fc {
			seen = append(seen, field)
			continue
		}
		t.Errorf("%s keeps a copy of %s, whose owner is actors/%s: ask the owner, or be told what to act on (docs/architecture.md, \"One owner per fact\")", field, fc, owner[fc])
	}
	for field := range knownCopies {
		if !slices.Contains(seen, field) {
			t.Errorf("%s no longer keeps a copy: remove it from knownCopies (and docs/architecture.md's table)", field)
		}
	}
}

// TestOnlyTheWatchSnapshotsTheLiveMembers fails when a package other than
// the watch, the live members' owner, takes a snapshot of live members
// (wire.SnapshotMembers): the others keep the snapshot the watch sent
// (PresenceChanged.Live), never one they derived.
func TestOnlyTheWatchSnapshotsTheLiveMembers(t *testing.T) {
	calls := 0
	eachSource(t, func(fset *token.FileSet, path string, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "SnapshotMembers" {
					calls++
					if dir := filepath.ToSlash(filepath.Dir(path)); dir != "watch" && dir != "internal/workertest" { // workertest plays the watch for tests
						t.Errorf("%s: actors/%s snapshots the live members, whose owner is actors/watch: keep the snapshot PresenceChanged carries", fset.Position(c.Pos()), dir)
					}
				}
			}
			return true
		})
	})
	if calls == 0 {
		t.Fatal("no call of SnapshotMembers found: the watch no longer snapshots the live members; update this test")
	}
}
