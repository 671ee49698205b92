package messages

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// types parses the package's non-test sources and returns its type
// declarations by name.
func types(t *testing.T) map[string]*ast.TypeSpec {
	t.Helper()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string]*ast.TypeSpec{}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if ts.Doc == nil {
					ts.Doc = g.Doc
				}
				out[ts.Name.Name] = ts
			}
		}
	}
	return out
}

// TestEveryTypeAndFieldIsDocumented: a user reads this package, so every
// type and every field says what it is.
func TestEveryTypeAndFieldIsDocumented(t *testing.T) {
	for name, ts := range types(t) {
		if ts.Doc == nil {
			t.Errorf("type %s has no doc comment", name)
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			continue
		}
		for _, f := range st.Fields.List {
			if f.Doc == nil && f.Comment == nil {
				t.Errorf("%s.%s has no doc comment", name, f.Names[0].Name)
			}
		}
	}
}

// TestOneReplyConvention: every command X has a reply XReply, carries an
// optional ReplyTo *actor.PID and types its epochs coordination.LeaseEpoch;
// every reply carries Err; nothing else is declared but the Tenancy a
// command names.
func TestOneReplyConvention(t *testing.T) {
	ts := types(t)
	commands := 0
	for name, spec := range ts {
		fields := map[string]string{}
		for _, f := range spec.Type.(*ast.StructType).Fields.List {
			for _, n := range f.Names {
				fields[n.Name] = typeString(f.Type)
			}
		}
		if e, ok := fields["Epoch"]; ok && e != "coordination.LeaseEpoch" {
			t.Errorf("%s.Epoch is %s, want coordination.LeaseEpoch", name, e)
		}
		switch {
		case strings.HasSuffix(name, "Reply"):
			if _, ok := ts[strings.TrimSuffix(name, "Reply")]; !ok {
				t.Errorf("%s answers no command", name)
			}
			if fields["Err"] != "error" {
				t.Errorf("%s has no Err error", name)
			}
		case name == "Tenancy":
		default:
			commands++
			if _, ok := ts[name+"Reply"]; !ok {
				t.Errorf("command %s has no %sReply", name, name)
			}
			if fields["ReplyTo"] != "*actor.PID" {
				t.Errorf("command %s has no ReplyTo *actor.PID", name)
			}
		}
	}
	if commands != 5 {
		t.Errorf("%d commands, want FailSplit, ReleaseSplits, DeclineRevoke, Subscribe and Unsubscribe", commands)
	}
}

// typeString spells a field's type expression.
func typeString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return typeString(e.X) + "." + e.Sel.Name
	case *ast.StarExpr:
		return "*" + typeString(e.X)
	case *ast.ArrayType:
		return "[]" + typeString(e.Elt)
	}
	return "?"
}
