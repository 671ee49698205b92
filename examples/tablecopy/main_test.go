package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spate-go/coordination/internal/examplekit"
	"github.com/spate-go/coordination/internal/examplekit/exampletest"
)

func TestMain(m *testing.M) { exampletest.Main(m, main) }

func TestBadFlagsExitTwoWithUsage(t *testing.T) {
	exampletest.CheckBadFlags(t, run, "tablecopy", []exampletest.BadFlag{
		{Name: "unknown flag", Args: []string{"-bogus"}, Want: "flag provided but not defined: -bogus"},
		{Name: "stray argument", Args: []string{"now"}, Want: `unexpected argument "now"`},
		{Name: "init without db", Args: []string{"-init"}, Want: "-init needs -db PATH"},
		{Name: "no table", Args: []string{"-table", ""}, Want: "-table must name a table"},
		{Name: "negative rows", Args: []string{"-rows", "-1"}, Want: "-rows must be 0..100000000, got -1"},
		{Name: "no splits", Args: []string{"-splits", "0"}, Want: "-splits must be 1..100000, got 0"},
		{Name: "no page", Args: []string{"-page", "0"}, Want: "-page must be 1..100000 rows, got 0"},
		{Name: "no workers", Args: []string{"-workers", "0"}, Want: "-workers must be 1..64, got 0"},
		{Name: "join fraction of one", Args: []string{"-join-at", "1"}, Want: "-join-at must be a fraction in [0, 1), got 1"},
		{Name: "kill fraction of one", Args: []string{"-kill-at", "1"}, Want: "-kill-at must be a fraction in [0, 1), got 1"},
		{Name: "kill with nobody to take over", Args: []string{"-workers", "1", "-join-at", "0"}, Want: "-kill-at needs a second worker"},
		{Name: "no timeout", Args: []string{"-timeout", "0s"}, Want: "-timeout must be positive"},
		{Name: "nats without instance", Args: []string{"-nats", "nats://127.0.0.1:1"}, Want: "-nats and -instance go together"},
		{Name: "instance without nats", Args: []string{"-instance", "a"}, Want: "-nats and -instance go together"},
		{Name: "instance without db", Args: []string{"-nats", "nats://127.0.0.1:1", "-instance", "a"}, Want: "-instance needs -db PATH"},
		{Name: "bad instance", Args: []string{"-db", "x.db", "-nats", "nats://127.0.0.1:1", "-instance", "a.b"}, Want: "InstanceID may only contain [A-Za-z0-9_-]"},
		{Name: "bad nats url", Args: []string{"-db", "x.db", "-nats", "http://x", "-instance", "a"}, Want: `-nats: scheme must be nats:// or tls://, got "http://x"`},
		{Name: "bad log level", Args: []string{"-log", "loud"}, Want: `-log must be debug, info, warn, error or off, got "loud"`},
	})
}

func TestHelpExitsZero(t *testing.T) { exampletest.CheckHelp(t, run, "-sink-resume") }

func TestMissingDatabaseSaysHowToCreateIt(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.db")
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"-db", missing}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if want := "-db " + missing + " -init"; !strings.Contains(stderr.String(), want) {
		t.Fatalf("stderr lacks %q:\n%s", want, stderr.String())
	}
}

// TestFleetCopiesExactlyAcrossAKill runs the program's main logic in
// process: three workers on an embedded NATS server, a fourth joining at 20%,
// one killed past 40%; SQL must then find the sink equal to the source,
// with every row inserted exactly once. The kill comes while the victim's
// sink is ahead of its last commit: without sink resume those pages are
// replayed and absorbed; with it they are skipped, though a forced drain's
// last page may still be absorbed.
func TestFleetCopiesExactlyAcrossAKill(t *testing.T) {
	for _, sinkResume := range []bool{true, false} {
		t.Run(fmt.Sprintf("sink-resume=%v", sinkResume), func(t *testing.T) {
			const rows = fleetRows
			o := &options{Common: examplekit.Common{Timeout: 90 * time.Second, Log: "off"}, table: sourceTable, rows: rows, splits: 16, page: 500, workers: 3, joinAt: 0.2, killAt: 0.4,
				sinkResume: sinkResume}
			var out bytes.Buffer
			rep, err := tablecopy(t.Context(), o, &out, nil)
			if rep != nil {
				rep.write(&out)
			}
			t.Log(out.String())
			if err != nil {
				t.Fatal(err)
			}
			v := rep.verdict
			if !rep.ok() || v.Source.Rows != rows || v.Sink != v.Source {
				t.Fatalf("source %s, sink %s; want %d rows, equal", v.Source, v.Sink, rows)
			}
			states := map[string]int{}
			var written int64
			for _, s := range rep.states {
				states[s.state]++
				written += v.Written[s.name]
			}
			if states["killed"] != 1 || states["completed"] != 3 || rep.killed == "" || rep.joined != "w4" {
				t.Fatalf("worker states %v, killed %q, joined %q; want 1 killed, 3 completed, w4 joined", states, rep.killed, rep.joined)
			}
			if written != rows {
				t.Fatalf("workers inserted %d rows in all, want %d (each row exactly once)", written, rows)
			}
			// The kill comes while the victim's sink is ahead of its last
			// commit: its successors skip those rows (sink resume) or the
			// sink absorbs their replay.
			if sinkResume && rep.skipped == 0 {
				t.Fatal("no row skipped at the sink's watermark after the kill")
			}
			if !sinkResume && (rep.skipped != 0 || v.Absorbed == 0) {
				t.Fatalf("without sink resume: %d rows skipped, %d absorbed; want 0 and some", rep.skipped, v.Absorbed)
			}
			for _, want := range []string{"KILL: ", "JOIN: w4", "result: OK"} {
				if !strings.Contains(out.String(), want) {
					t.Fatalf("output lacks %q", want)
				}
			}
		})
	}
}

// TestProcessesDivideOneJob creates a database with
// -init, then runs two processes (-instance a and b) against one NATS server:
// both must exit 0 having verified the shared sink, and both must have
// copied rows.
func TestProcessesDivideOneJob(t *testing.T) {
	srv, err := startNATS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.close() })
	db := filepath.Join(t.TempDir(), "t.db")
	if code, out := exampletest.Start(t, []string{"-db", db, "-init", "-rows", "10000"}).Wait(t); code != 0 {
		t.Fatalf("-init: exit %d\n%s", code, out)
	}
	var procs []*exampletest.Process
	for _, name := range []string{"a", "b"} {
		procs = append(procs, exampletest.Start(t, []string{"-db", db, "-nats", srv.url(), "-instance", name, "-splits", "16", "-page", "200", "-log", "off", "-timeout", "90s"}))
	}
	for i, name := range []string{"a", "b"} {
		code, out := procs[i].Wait(t)
		t.Logf("instance %s:\n%s", name, out)
		if code != 0 {
			t.Fatalf("instance %s exited %d", name, code)
		}
		if !strings.Contains(out, "result: OK") {
			t.Fatalf("instance %s did not verify the sink", name)
		}
		var a, b int64
		line := exampletest.ReportLine(t, out, "  workers:")
		format := map[string]string{
			"a": "a completed (%d rows), b in another process (%d rows)",
			"b": "a in another process (%d rows), b completed (%d rows)",
		}[name]
		if _, err := fmt.Sscanf(line, format, &a, &b); err != nil || a == 0 || b == 0 || a+b != 10_000 {
			t.Fatalf("instance %s: workers line %q: %v; want both processes' rows, adding up to 10000", name, line, err)
		}
	}
}

func TestURLPasswordIsNeverPrinted(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "t.db")
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"-db", db, "-init", "-rows", "100"}, &out, &errb); code != 0 {
		t.Fatalf("-init: exit %d\n%s", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	// Nothing listens on port 1: the run prints its start line, retries and
	// gives up at -timeout.
	args := []string{"-db", db, "-nats", "nats://svc:hunter2@127.0.0.1:1", "-instance", "a", "-timeout", "1s", "-log", "off"}
	if code := run(t.Context(), args, &out, &errb); code == 0 {
		t.Fatal("a run against an unreachable server exited 0")
	}
	text := out.String() + errb.String()
	if !strings.Contains(text, "on NATS at nats://<redacted>@127.0.0.1:1") {
		t.Errorf("the start line does not name the redacted URL:\n%s", text)
	}
	if strings.Contains(text, "hunter2") {
		t.Errorf("the output shows the URL's password:\n%s", text)
	}
}
