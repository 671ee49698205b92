package actors

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"
)

// commitPath is the path of one Commit from Driver.Commit to store.Update,
// file by file in the order a reader opens them, each with the
// declarations of the path it holds (docs/architecture.md, "The commit
// path"; issue #40 asks for at most 10 files). A declaration is a function,
// Recv.Method, or type.
var commitPath = []struct {
	file  string // relative to the module root
	decls []string
}{
	{"driver/commit.go", []string{"Driver.Commit", "tenancy.committable", "Driver.commit", "Driver.triage", "Driver.landed"}},
	{"coordinator.go", []string{"Coordinator"}},
	{"actors/handle_commit.go", []string{"Coordinator.Commit", "Coordinator.CommitFinal", "Coordinator.commit"}},
	{"actors/internal/worker/outbox.go", []string{"Outbox.PolledEpoch"}},
	{"actors/commitwriter/commitwriter.go", []string{"CommitRequest", "CommitResult", "Writers.Ask", "commitWriter.ask", "mailbox.tryTurn", "mailbox.endTurn", "progressCell.advance"}},
	{"actors/commitwriter/commitwrite.go", []string{"commitWriter.commit", "casProgress", "progressWrite", "checkWatermark", "classifyProgressConflict", "commitWriter.landed", "commitWriter.notLanded"}},
	{"internal/protocol/progress.go", []string{"ProgressRecord.Commit"}},
	{"actors/internal/worker/cas.go", []string{"CASAdopt", "update"}},
	{"actors/internal/worker/guard.go", []string{"GuardedStore.Update"}},
	{"store/store.go", []string{"Store"}},
}

// TestCommitPathOpensAtMostTenFiles checks that the commit path is at most
// 10 files, that each step of it is declared in the file the path names,
// and that docs/architecture.md lists the same files in the same order.
func TestCommitPathOpensAtMostTenFiles(t *testing.T) {
	if len(commitPath) > 10 {
		t.Errorf("the commit path opens %d files; issue #40 asks for at most 10", len(commitPath))
	}
	fset := token.NewFileSet()
	var files []string
	for _, step := range commitPath {
		files = append(files, step.file)
		f, err := parser.ParseFile(fset, "../"+step.file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		have := declarations(f)
		for _, d := range step.decls {
			if !slices.Contains(have, d) {
				t.Errorf("%s declares no %s; the commit path (docs/architecture.md, \"The commit path\") reads it there", step.file, d)
			}
		}
	}
	sec := architectureSection(t, "The commit path")
	var listed []string
	for line := range strings.SplitSeq(sec, "\n") {
		cols := strings.Split(line, "|")
		if len(cols) > 3 && strings.HasPrefix(strings.TrimSpace(cols[2]), "`") {
			listed = append(listed, strings.Trim(strings.TrimSpace(cols[2]), "`"))
		}
	}
	if !slices.Equal(listed, files) {
		t.Errorf("docs/architecture.md's commit path lists %v, want %v", listed, files)
	}
}

// declarations returns the functions (Recv.Name for a method) and types f
// declares.
func declarations(f *ast.File) []string {
	var out []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			name := d.Name.Name
			if d.Recv != nil && len(d.Recv.List) == 1 {
				name = typeName(d.Recv.List[0].Type) + "." + name
			}
			out = append(out, name)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok {
					out = append(out, ts.Name.Name)
				}
			}
		}
	}
	return out
}
