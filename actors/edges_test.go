package actors

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The routing of one worker has no table: each actor names, where it
// sends, the PIDs it tells (docs/architecture.md, "Routing"). The tests
// below read those sends out of the source, so the graph stays countable
// and the document stays true.

// maxEdges bounds the (message type, sender, receiver) edges between the
// parts of one worker: the count now, so that a change adding an edge says
// why here and in docs/architecture.md, "Routing" (issue #40 asks for at
// most 50; 82 with the old routing table).
const maxEdges = 48

// edge is one (message type, sender, receiver) of the routing graph.
type edge struct{ msg, from, to string }

// roles maps a field of worker.PIDs to the part's name in the docs.
var roles = map[string]string{
	"Root": "root", "Watch": "watch", "Lease": "lease", "Leader": "leader",
	"SplitWriter": "splitwriter", "Revoke": "revoke",
}

// sendFuncs are the calls that send between parts of a worker: a message
// argument and PIDs (or, for PostCommit and the handle's commits.Ask, the
// commit writer).
var sendFuncs = map[string]bool{"Tell": true, "tell": true, "observe": true, "Send": true, "call": true, "PostCommit": true, "Ask": true}

// sender names the part a file of the root package belongs to: the root
// actor's files, or the handle's (the caller's goroutine).
func sender(dir, file string) string {
	if dir != "." {
		return dir
	}
	switch file {
	case "root.go", "depart.go", "subscribe.go":
		return "root"
	}
	return "handle"
}

// eachFunc calls fn with every function body of the non-test sources of
// actors/ and its actor packages, and the part of the worker the file is.
func eachFunc(t *testing.T, fn func(part string, fd *ast.FuncDecl)) {
	t.Helper()
	fset := token.NewFileSet()
	for _, dir := range append([]string{"."}, actorPackages...) {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			part := sender(dir, filepath.Base(path))
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					fn(part, fd)
				}
			}
		}
	}
}

// routingEdges reads every send between parts of a worker out of the
// non-test sources of actors/ and its actor packages.
func routingEdges(t *testing.T) []edge {
	t.Helper()
	var edges []edge
	eachFunc(t, func(from string, fd *ast.FuncDecl) {
		scope := map[string]string{}
		for _, p := range fd.Type.Params.List {
			for _, n := range p.Names {
				scope[n.Name] = typeName(p.Type)
			}
		}
		edges = append(edges, sends(fd.Body, from, scope)...)
	})
	return edges
}

// sends returns the edges of the sends in n, resolving a message named by
// a variable through scope (parameters, := of a composite literal, the
// variable of a one-type case of a type switch).
func sends(n ast.Node, from string, scope map[string]string) []edge {
	var out []edge
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE && len(n.Lhs) == 1 && len(n.Rhs) == 1 {
				if id, ok := n.Lhs[0].(*ast.Ident); ok {
					if cl, ok := n.Rhs[0].(*ast.CompositeLit); ok {
						scope[id.Name] = typeName(cl.Type)
					}
				}
			}
		case *ast.TypeSwitchStmt:
			as, ok := n.Assign.(*ast.AssignStmt)
			if !ok {
				return true
			}
			v := as.Lhs[0].(*ast.Ident).Name
			for _, c := range n.Body.List {
				cc := c.(*ast.CaseClause)
				inner := maps.Clone(scope)
				if len(cc.List) == 1 {
					inner[v] = typeName(cc.List[0])
				}
				for _, s := range cc.Body {
					out = append(out, sends(s, from, inner)...)
				}
			}
			return false
		case *ast.CallExpr:
			out = append(out, send(n, from, scope)...)
		}
		return true
	})
	return out
}

// send returns the edges of call, when it is a send between parts.
func send(call *ast.CallExpr, from string, scope map[string]string) []edge {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || !sendFuncs[sel.Sel.Name] {
		return nil
	}
	var to []string
	if sel.Sel.Name == "PostCommit" || sel.Sel.Name == "Ask" {
		to = append(to, "commitwriter")
	}
	msg := ""
	for _, a := range call.Args {
		if r := role(a); r != "" {
			to = append(to, r)
			continue
		}
		switch a := a.(type) {
		case *ast.CompositeLit:
			msg = typeName(a.Type)
		case *ast.Ident:
			if t := scope[a.Name]; t != "" && t != "any" {
				msg = t
			}
		}
	}
	var out []edge
	for _, r := range to {
		if msg != "" && r != from {
			out = append(out, edge{msg, from, r})
		}
	}
	return out
}

// role returns the part a PIDs field expression names (v.PIDs.Leader, or
// p.Leader with p := v.PIDs), or "".
func role(e ast.Expr) string {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || roles[sel.Sel.Name] == "" {
		return ""
	}
	switch x := sel.X.(type) {
	case *ast.SelectorExpr:
		if x.Sel.Name == "PIDs" {
			return roles[sel.Sel.Name]
		}
	case *ast.Ident:
		if x.Name == "p" {
			return roles[sel.Sel.Name]
		}
	}
	return ""
}

// typeName returns the unqualified name of a type expression.
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.StarExpr:
		return typeName(e.X)
	}
	return ""
}

// edgeTable renders edges as docs/architecture.md's routing table: one
// row per message and sender, its receivers in source order.
func edgeTable(edges []edge) string {
	type key struct{ msg, from string }
	var order []key
	to := map[key][]string{}
	for _, e := range edges {
		k := key{e.msg, e.from}
		if _, ok := to[k]; !ok {
			order = append(order, k)
		}
		if !slices.Contains(to[k], e.to) {
			to[k] = append(to[k], e.to)
		}
	}
	slices.SortStableFunc(order, func(a, b key) int {
		return strings.Compare(a.from+" "+a.msg, b.from+" "+b.msg)
	})
	var b strings.Builder
	b.WriteString("| from | message | to |\n|---|---|---|\n")
	for _, k := range order {
		fmt.Fprintf(&b, "| %s | `%s` | %s |\n", k.from, k.msg, strings.Join(to[k], ", "))
	}
	return b.String()
}

// uniqueEdges drops repeated edges (one message sent from two places).
func uniqueEdges(edges []edge) []edge {
	var out []edge
	for _, e := range edges {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// TestRoutingEdgesWithinBudget counts the routing graph's edges, read from
// the sends in the source, and fails above maxEdges.
func TestRoutingEdgesWithinBudget(t *testing.T) {
	edges := uniqueEdges(routingEdges(t))
	if len(edges) == 0 {
		t.Fatal("no sends found: the scanner no longer matches how actors send")
	}
	if len(edges) > maxEdges {
		t.Errorf("%d routing edges, more than %d:\n%s", len(edges), maxEdges, edgeTable(edges))
	}
	t.Logf("%d routing edges", len(edges))
}

// TestRoutingDocMatchesSends checks that docs/architecture.md's routing
// table is the graph the sources send, row for row.
func TestRoutingDocMatchesSends(t *testing.T) {
	sec := architectureSection(t, "Routing")
	var rows []string
	for line := range strings.SplitSeq(sec, "\n") {
		if strings.HasPrefix(line, "|") {
			rows = append(rows, line)
		}
	}
	got, want := strings.Join(rows, "\n")+"\n", edgeTable(uniqueEdges(routingEdges(t)))
	if got != want {
		t.Errorf("docs/architecture.md's routing table differs from the sends in the source; replace it with:\n%s\ngot:\n%s", want, got)
	}
}

// handled returns, per part, the message types a case of its receive
// switch names, or its Receive takes by a type assertion (the root's
// Receive, an actor's Receive or receive, the commit writer's receive).
func handled(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	eachFunc(t, func(part string, fd *ast.FuncDecl) {
		if fd.Name.Name != "Receive" && fd.Name.Name != "receive" {
			return
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CaseClause:
				for _, e := range n.List {
					out[part] = append(out[part], typeName(e))
				}
			case *ast.TypeAssertExpr: // the hot message, taken before the switch
				out[part] = append(out[part], typeName(n.Type))
			}
			return true
		})
	})
	return out
}

// TestEverySendIsHandled checks that each part a message is sent to names
// the message in a case of its receive switch: a send nobody handles is
// found here, not at run time as an "unknown message" warning.
func TestEverySendIsHandled(t *testing.T) {
	cases := handled(t)
	for _, e := range uniqueEdges(routingEdges(t)) {
		if !slices.Contains(cases[e.to], e.msg) {
			t.Errorf("%s sends %s to %s, whose receive switch has no case for it", e.from, e.msg, e.to)
		}
	}
}

// architectureSection is the text of docs/architecture.md's "## heading"
// section, up to the next "## ".
func architectureSection(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("docs/architecture.md has no %q section", "## "+heading)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	return sec
}
