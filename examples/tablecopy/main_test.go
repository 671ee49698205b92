package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestBadFlagsExitTwoWithUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "unknown flag", args: []string{"-bogus"}, want: "flag provided but not defined: -bogus"},
		{name: "stray argument", args: []string{"now"}, want: `unexpected argument "now"`},
		{name: "init without db", args: []string{"-init"}, want: "-init needs -db PATH"},
		{name: "no table", args: []string{"-table", ""}, want: "-table must name a table"},
		{name: "negative rows", args: []string{"-rows", "-1"}, want: "-rows must be 0..100000000, got -1"},
		{name: "no splits", args: []string{"-splits", "0"}, want: "-splits must be 1..100000, got 0"},
		{name: "no page", args: []string{"-page", "0"}, want: "-page must be 1..100000 rows, got 0"},
		{name: "no workers", args: []string{"-workers", "0"}, want: "-workers must be 1..64, got 0"},
		{name: "join fraction of one", args: []string{"-join-at", "1"}, want: "-join-at must be a fraction in [0, 1), got 1"},
		{name: "kill fraction of one", args: []string{"-kill-at", "1"}, want: "-kill-at must be a fraction in [0, 1), got 1"},
		{name: "kill with nobody to take over", args: []string{"-workers", "1", "-join-at", "0"}, want: "-kill-at needs a second worker"},
		{name: "no timeout", args: []string{"-timeout", "0s"}, want: "-timeout must be positive"},
		{name: "nats without instance", args: []string{"-nats", "nats://127.0.0.1:1"}, want: "-nats and -instance go together"},
		{name: "instance without nats", args: []string{"-instance", "a"}, want: "-nats and -instance go together"},
		{name: "instance without db", args: []string{"-nats", "nats://127.0.0.1:1", "-instance", "a"}, want: "-instance needs -db PATH"},
		{name: "bad instance", args: []string{"-db", "x.db", "-nats", "nats://127.0.0.1:1", "-instance", "a.b"}, want: "InstanceID may only contain [A-Za-z0-9_-]"},
		{name: "bad nats url", args: []string{"-db", "x.db", "-nats", "http://x", "-instance", "a"}, want: `-nats must be a nats:// or tls:// URL, got "http://x"`},
		{name: "bad log level", args: []string{"-log", "loud"}, want: `-log must be debug, info, warn, error or off, got "loud"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), tt.args, &stdout, &stderr); code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) || !strings.Contains(stderr.String(), "usage: tablecopy") {
				t.Fatalf("stderr lacks %q and the usage:\n%s", tt.want, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Fatalf("wrote to stdout: %s", stdout.String())
			}
		})
	}
}

func TestHelpExitsZero(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"-h"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	if !strings.Contains(stderr.String(), "-sink-resume") {
		t.Fatalf("help lacks the flags:\n%s", stderr.String())
	}
}

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
// the busiest killed at 40%; SQL must then find the sink equal to the
// source, with every row inserted exactly once. Without sink resume the
// killed worker's uncommitted pages are replayed and absorbed; with it they
// are skipped, though a forced drain's last page may still be absorbed.
func TestFleetCopiesExactlyAcrossAKill(t *testing.T) {
	for _, sinkResume := range []bool{true, false} {
		t.Run(fmt.Sprintf("sink-resume=%v", sinkResume), func(t *testing.T) {
			const rows = fleetRows
			o := &options{table: sourceTable, rows: rows, splits: 16, page: 500, workers: 3, joinAt: 0.2, killAt: 0.4,
				sinkResume: sinkResume, timeout: 90 * time.Second, logLevel: "off"}
			var out bytes.Buffer
			rep, err := tablecopy(t.Context(), o, &out)
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
			if !sinkResume && rep.skipped != 0 {
				t.Fatalf("%d rows skipped without sink resume", rep.skipped)
			}
			for _, want := range []string{"KILL: ", "JOIN: w4", "result: OK"} {
				if !strings.Contains(out.String(), want) {
					t.Fatalf("output lacks %q", want)
				}
			}
		})
	}
}

// runMainEnv, set to 1, makes the test binary run main instead of the tests,
// so a test can start the program as a process without building it.
const runMainEnv = "TABLECOPY_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// program returns a command running the program with args.
func program(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	return cmd
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
	if out, err := program(t.Context(), "-db", db, "-init", "-rows", "10000").CombinedOutput(); err != nil {
		t.Fatalf("-init: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	outs := make([]string, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, name := range []string{"a", "b"} {
		wg.Go(func() {
			cmd := program(ctx, "-db", db, "-nats", srv.url(), "-instance", name, "-splits", "16", "-page", "200", "-log", "off")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			errs[i] = cmd.Run()
			outs[i] = out.String()
		})
	}
	wg.Wait()
	for i, name := range []string{"a", "b"} {
		t.Logf("instance %s:\n%s", name, outs[i])
		if errs[i] != nil {
			t.Fatalf("instance %s: %v", name, errs[i])
		}
		if !strings.Contains(outs[i], "result: OK") {
			t.Fatalf("instance %s did not verify the sink", name)
		}
		var a, b int64
		line := reportLine(t, outs[i], "  workers:")
		format := map[string]string{
			"a": "a completed (%d rows), b in another process (%d rows)",
			"b": "a in another process (%d rows), b completed (%d rows)",
		}[name]
		if _, err := fmt.Sscanf(line, format, &a, &b); err != nil || a == 0 || b == 0 || a+b != 10_000 {
			t.Fatalf("instance %s: workers line %q: %v; want both processes' rows, adding up to 10000", name, line, err)
		}
	}
}

// reportLine returns the value of the report line starting with key.
func reportLine(t testing.TB, out, key string) string {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %q line in the report", key)
	return ""
}
