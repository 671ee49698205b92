package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spate-go/coordination/internal/pgtest"
)

// TestEveryFigure runs every figure once at a tiny size on the embedded
// server, so the program cannot rot: each figure must print its line (no
// timeout, no error) with a positive measurement and a positive ratio or
// rate beside its baseline (F2's publish window may hold no claim at all,
// and F6's difference may be negative at this size).
func TestEveryFigure(t *testing.T) {
	c, err := parseFlags([]string{
		"-splits", "30", "-workers", "2", "-maxinflight", "100", "-lease", "3s", "-idle", "2s",
		"-f4few", "3", "-f4many", "12", "-f4window", "1s", "-samples", "40", "-timeout", "90s",
		"-f8runs", "1", "-f8splits", "20", "-grace", "1s",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, c, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	lines := make(map[string]string)
	for _, l := range strings.Split(out.String(), "\n") {
		if name, _, ok := strings.Cut(l, " "); ok && strings.HasPrefix(name, "F") {
			lines[name] = l
		}
	}
	for _, tc := range []struct {
		name string
		re   string // each submatch must parse as a positive number
	}{
		{"F1", `: ([0-9.]+) s .*seeding creates ([0-9]+).*ratio ([0-9.]+)`},
		{"F2", `all held ([0-9.]+) s .*ratio ([0-9.]+|n/a) .*Start -> all held ([0-9.]+) s.*ratio ([0-9.]+)`},
		{"F3", `writes/worker/heartbeat min ([0-9.]+) max ([0-9.]+).*CPU ([0-9.]+) %`},
		{"F4", `-> ([0-9.]+)/s .*-> ([0-9.]+)/s .*ratio ([0-9.]+)`},
		{"F5", `p50 ([0-9.]+) ms p99 ([0-9.]+) ms; raw KV Update p50 ([0-9.]+) ms p99 ([0-9.]+) ms; ratio p50 ([0-9.]+)`},
		{"F6", `: (-?[0-9.]+) B \(heap`},
		{"F7", `Start -> all held ([0-9.]+) s, first Gained -> all held ([0-9.]+) s.*snapshots loaded at ([0-9.]+) s-([0-9.]+) s.*: ([0-9.]+) s; rate ratio.*floor .*snapshots ([0-9.]+) s, writes landed ([0-9.]+) s .*every update seen by all ([0-9.]+) s`},
		{"F8", `balanced at first hold and 0 moves in (1) of 1 .*Start -> all held median ([0-9.]+) s`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, ok := lines[tc.name]
			if !ok {
				t.Fatalf("no %s line in the output", tc.name)
			}
			if strings.Contains(l, "timeout") || strings.Contains(l, "error") {
				t.Fatalf("%s did not finish: %s", tc.name, l)
			}
			m := regexp.MustCompile(tc.re).FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("%s line does not match %q: %s", tc.name, tc.re, l)
			}
			for _, s := range m[1:] {
				if s == "n/a" { // F2's publish window when every claim landed before it
					continue
				}
				v, err := strconv.ParseFloat(s, 64)
				if err != nil || (v <= 0 && tc.name != "F6") {
					t.Errorf("%s: figure %q is not a positive number in %s", tc.name, s, l)
				}
			}
		})
	}
}

// TestOnlyRunsTheNamedFigures checks -only selects figures and runs nothing
// else.
// TestFiguresOnPostgres runs the figures the PostgreSQL store is judged by
// (claims, idle cost, commit latency) on a throwaway server, tiny.
func TestFiguresOnPostgres(t *testing.T) {
	if _, err := pgtest.FindBinaries(); err != nil && os.Getenv(pgtest.RequireEnv) == "" {
		t.Skip(err)
	}
	c, err := parseFlags([]string{"-store", "postgres", "-only", "F2,F3,F5", "-splits", "30", "-workers", "2", "-maxinflight", "100",
		"-lease", "3s", "-idle", "2s", "-samples", "40", "-timeout", "90s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(t.Context(), c, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^F2 2 workers claim 30 splits .*ratio [0-9.]+`),
		regexp.MustCompile(`(?m)^F3 .*PostgreSQL server CPU [0-9.]+ % .*: [0-9]+ written .*, [0-9]+ removed`),
		regexp.MustCompile(`(?m)^F5 .*raw UPDATE \.\.\. WHERE rev = \$1 p50 [0-9.]+ ms.*; store Update p50 [0-9.]+ ms p99 [0-9.]+ ms, ratio p50 [0-9.]+ p99 [0-9.]+`),
	} {
		if !want.MatchString(out.String()) {
			t.Errorf("no line matching %s in:\n%s", want, out.String())
		}
	}
}

func TestOnlyRunsTheNamedFigures(t *testing.T) {
	c, err := parseFlags([]string{"-only", "f5", "-samples", "5", "-lease", "3s", "-timeout", "60s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), c, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, name := range figures {
		has := strings.Contains(out.String(), "\n"+name+" ")
		if has != (name == "F5") {
			t.Errorf("%s printed %v, want %v:\n%s", name, has, name == "F5", out.String())
		}
	}
}

// TestParseFlagsRejects checks bad input is refused with a message naming
// the flag.
func TestParseFlagsRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown figure", []string{"-only", "F1,F9"}, `-only: unknown figure "F9"`},
		{"empty figure", []string{"-only", "F1,"}, `-only: unknown figure ""`},
		{"zero splits", []string{"-splits", "0"}, "-splits must be at least 1"},
		{"zero workers", []string{"-workers", "0"}, "-workers must be at least 1"},
		{"short lease", []string{"-lease", "1s"}, "-lease must be at least 2s"},
		{"negative idle", []string{"-idle", "-1s"}, "-idle must be positive"},
		{"negative grace", []string{"-grace", "-1s"}, "-grace must be >= 0"},
		{"zero f8runs", []string{"-f8runs", "0"}, "-f8runs must be at least 1"},
		{"zero timeout", []string{"-timeout", "0s"}, "-timeout must be positive"},
		{"argument", []string{"extra"}, `unexpected argument "extra"`},
		{"unknown store", []string{"-store", "nats,redis"}, `-store: unknown store "redis"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseFlags(tc.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}

// TestTimeoutIsReported checks a figure that cannot finish within -timeout
// stops by itself and says so instead of hanging or failing the run.
func TestTimeoutIsReported(t *testing.T) {
	c, err := parseFlags([]string{"-only", "F1", "-splits", "50000", "-lease", "3s", "-timeout", "200ms"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	start := time.Now()
	if err := run(context.Background(), c, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !regexp.MustCompile(`\nF1 timeout after [0-9]+s waiting for the plan published`).MatchString(out.String()) {
		t.Fatalf("no F1 timeout line:\n%s", out.String())
	}
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("run took %s after a 200ms timeout", d)
	}
}
