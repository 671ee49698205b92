package actors

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// worker.Env holds only immutable things (docs/architecture.md, "What
// `worker.Env` holds"): values set at spawn and handles whose state is not
// a fact an actor decides. Two checks keep it so: every field's type is one
// of immutableKinds (a struct of worker's is checked field by field), and
// no non-test source of actors/ but Spawn's assigns a field of an Env.

// immutableKinds are the field types an Env may hold, each with why it is
// not state one actor writes and another reads.
var immutableKinds = map[string]string{
	"string":                  "a value set at spawn",
	"int":                     "a value set at spawn",
	"coordination.Config":     "configuration, a value set at spawn",
	"*actor.Engine":           "the runtime the actors run on",
	"*actor.PID":              "an actor's address, computed before any is spawned",
	"store.Store":             "the store handle",
	"clock.Clock":             "the clock handle",
	"*slog.Logger":            "the logger handle",
	"*Metrics":                "metrics handles, safe for concurrent use",
	"commitDesk":              "the commit writer's inbox",
	"context.Context":         "the worker's lifetime, or the failure latch: a handle whose state only goes from live to done",
	"context.CancelFunc":      "ends the worker's lifetime (Depart's end, Abort)",
	"context.CancelCauseFunc": "fires the failure latch (the first failure wins)",
	"*sync.WaitGroup":         "the worker's goroutine group (its lifetime)",
	"*Backlog":                "flow control, not a fact: the watch hand-off's credit semaphore, which a message would queue behind",
}

// envKinds returns, for each field of worker's struct typ (and, through
// a field whose type is another struct of worker's, of that one), the
// field's name and its type as written ("Env.Latch.fired: context.Context").
func envKinds(t *testing.T, structs map[string]*ast.StructType, typ string) []string {
	t.Helper()
	st, ok := structs[typ]
	if !ok {
		t.Fatalf("worker declares no struct %s", typ)
	}
	var out []string
	for _, fl := range st.Fields.List {
		kind := types.ExprString(fl.Type)
		names := fl.Names
		if len(names) == 0 { // embedded
			names = []*ast.Ident{ast.NewIdent(kind)}
		}
		for _, nm := range names {
			if _, nested := structs[kind]; nested {
				for _, inner := range envKinds(t, structs, kind) {
					out = append(out, typ+"."+nm.Name+"."+strings.TrimPrefix(inner, kind+"."))
				}
				continue
			}
			out = append(out, typ+"."+nm.Name+": "+kind)
		}
	}
	return out
}

// workerStructs returns the struct types declared in the Go sources src.
func workerStructs(t *testing.T, src map[string]string) map[string]*ast.StructType {
	t.Helper()
	structs := map[string]*ast.StructType{}
	fset := token.NewFileSet()
	for name, text := range src {
		f, err := parser.ParseFile(fset, name, text, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range gd.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok {
					if st, ok := ts.Type.(*ast.StructType); ok {
						structs[ts.Name.Name] = st
					}
				}
			}
		}
	}
	return structs
}

// mutableEnvFields returns the fields of Env, declared in src, whose type
// is not one of immutableKinds.
func mutableEnvFields(t *testing.T, src map[string]string) []string {
	t.Helper()
	var bad []string
	for _, f := range envKinds(t, workerStructs(t, src), "Env") {
		_, kind, _ := strings.Cut(f, ": ")
		if _, ok := immutableKinds[kind]; !ok {
			bad = append(bad, f)
		}
	}
	return bad
}

// readSources returns the non-test Go files of dir, by path.
func readSources(t *testing.T, dir string) map[string]string {
	t.Helper()
	src := map[string]string{}
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if !strings.HasSuffix(p, "_test.go") {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			src[p] = string(b)
		}
	}
	return src
}

// TestEnvHoldsOnlyImmutableThings fails when worker.Env gains a field of a
// kind that is not in immutableKinds: a latch, a queue, a map or an atomic
// one actor writes and another reads belongs to its owner, told by message.
func TestEnvHoldsOnlyImmutableThings(t *testing.T) {
	for _, f := range mutableEnvFields(t, readSources(t, "internal/worker")) {
		t.Errorf("worker.%s is not one of the immutable kinds an Env holds: keep the fact in the actor that owns it and tell the others by message, or give it to the two parts that share it at spawn (as the outbox); docs/architecture.md, \"What `worker.Env` holds\"", f)
	}
}

// TestEnvCheckFindsTheSharedFieldsOfOld is the check above on the Env of
// before issue #40's step (a latch, the outbox, the backlog and the group
// by value): it finds each.
func TestEnvCheckFindsTheSharedFieldsOfOld(t *testing.T) {
	const old = `package worker
type PIDs struct{ Root, Watch *actor.PID }
type Env struct {
	Engine  *actor.Engine
	Config  coordination.Config
	Outbox  *Outbox
	PIDs    PIDs
	Backlog backlog
	Ctx     context.Context
	WG      sync.WaitGroup
	Halted  atomic.Bool
}`
	got := mutableEnvFields(t, map[string]string{"env.go": old})
	want := []string{"Env.Outbox: *Outbox", "Env.Backlog: backlog", "Env.WG: sync.WaitGroup", "Env.Halted: atomic.Bool"}
	if !slices.Equal(got, want) {
		t.Fatalf("found %q, want %q", got, want)
	}
}

// TestNoActorWritesAnEnvField fails when a non-test source of actors/
// assigns a field of a worker.Env (v.F = ..., v.F.G++, &v.F) outside Spawn,
// which builds it: every part reads the Env it was given at spawn as it
// was built. The Env is named v wherever it is held, so the check is by
// name.
func TestNoActorWritesAnEnvField(t *testing.T) {
	fields := map[string]bool{}
	for _, f := range envKinds(t, workerStructs(t, readSources(t, "internal/worker")), "Env") {
		name, _, _ := strings.Cut(strings.TrimPrefix(f, "Env."), ".")
		name, _, _ = strings.Cut(name, ":")
		fields[name] = true
	}
	// envField reports whether e is, or selects into, v.F for a field F
	// of Env, with v an identifier or a selector (r.v).
	envField := func(e ast.Expr) bool {
		for {
			switch x := e.(type) {
			case *ast.SelectorExpr:
				if fields[x.Sel.Name] {
					switch b := x.X.(type) {
					case *ast.Ident:
						if b.Name == "v" {
							return true
						}
					case *ast.SelectorExpr:
						if b.Sel.Name == "v" {
							return true
						}
					}
				}
				e = x.X
			case *ast.IndexExpr:
				e = x.X
			case *ast.StarExpr:
				e = x.X
			case *ast.ParenExpr:
				e = x.X
			default:
				return false
			}
		}
	}
	var writes []string
	eachSource(t, func(fset *token.FileSet, path string, f *ast.File) {
		if path == "spawn.go" || strings.HasPrefix(filepath.ToSlash(path), "internal/workertest/") {
			return // Spawn builds the Env; workertest builds the tests'
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var lhs []ast.Expr
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok != token.DEFINE {
					lhs = n.Lhs
				}
			case *ast.IncDecStmt:
				lhs = []ast.Expr{n.X}
			case *ast.UnaryExpr:
				if n.Op == token.AND {
					lhs = []ast.Expr{n.X}
				}
			}
			for _, e := range lhs {
				if envField(e) {
					writes = append(writes, fset.Position(e.Pos()).String()+": "+types.ExprString(e))
				}
			}
			return true
		})
	})
	for _, w := range writes {
		t.Errorf("%s writes a field of worker.Env after Spawn built it: an actor's decision is its own, told to the others by message (docs/architecture.md, \"What `worker.Env` holds\")", w)
	}
}
