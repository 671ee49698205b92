package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spate-go/coordination/internal/examplekit/exampletest"
	"github.com/spate-go/coordination/internal/pgtest"
)

// TestProcessesDivideOneJobOnPostgres runs two processes, -instance a and
// -instance b, on one PostgreSQL database: both finish with status 0 and
// lose nothing, the final audit (coordctl audit on the change log) is
// clean, and a -verify run proves from the ledger alone that nothing was
// lost.
func TestProcessesDivideOneJobOnPostgres(t *testing.T) {
	t.Parallel()
	srv := pgtest.StartT(t)
	args := []string{"-postgres", srv.DSN("postgres"), "-job", "divide", "-splits", "8", "-records", "10000", "-pace", "500", "-log", "off"}
	a := exampletest.Start(t, append(args, "-instance", "a", "-quiet"))
	b := exampletest.Start(t, append(args, "-instance", "b", "-quiet"))
	for name, p := range map[string]*exampletest.Process{"a": a, "b": b} {
		code, out := p.Wait(t)
		t.Logf("instance %s:\n%s", name, out)
		if code != 0 {
			t.Fatalf("instance %s exited %d", name, code)
		}
		if got := exampletest.ReportLine(t, out, "lost:"); got != "0" {
			t.Fatalf("instance %s: lost: %s", name, got)
		}
		if !strings.Contains(out, "violations: 0") {
			t.Fatalf("instance %s: no clean audit in its report", name)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), append(args, "-verify"), &stdout, &stderr); code != 0 {
		t.Fatalf("-verify exited %d:\n%s%s", code, stdout.String(), stderr.String())
	}
	if got := exampletest.ReportLine(t, stdout.String(), "lost:"); got != "0" {
		t.Fatalf("-verify: lost: %s\n%s", got, stdout.String())
	}
}
