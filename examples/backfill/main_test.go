package main

import (
	"context"
	"io"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestBadFlagsExitTwoWithUsage(t *testing.T) {
	for _, tt := range []struct {
		name, want string
		args       []string
	}{
		{"unknown flag", "flag provided but not defined: -bogus", []string{"-bogus"}},
		{"stray argument", `unexpected argument "now"`, []string{"now"}},
		{"no workers", "-workers must be 1..64, got 0", []string{"-workers", "0"}},
		{"no lanes", "-lanes must be 1..1024, got 0", []string{"-lanes", "0"}},
		{"no splits", "-splits must be 1..100000, got 0", []string{"-splits", "0"}},
		{"no records", "-records must be 1..100000000, got 0", []string{"-records", "0"}},
		{"crash fraction of one", "-crash-at must be a fraction in [0, 1), got 1", []string{"-crash-at", "1"}},
		{"crash with one worker", "-crash-at needs at least 2 workers", []string{"-workers", "1"}},
		{"no pace", "-pace must be at least 1", []string{"-pace", "0"}},
		{"no timeout", "-timeout must be positive", []string{"-timeout", "0s"}},
		{"negative outage", "-outage must not be negative, got -1s", []string{"-outage", "-1s"}},
		{"outage on external nats", "-outage stops the embedded NATS server", []string{"-outage", "2s", "-nats", "nats://127.0.0.1:1"}},
		{"outage on postgres", "cannot be used with -nats or -postgres", []string{"-postgres", "postgres://svc@db/x", "-outage", "2s"}},
		{"outage fraction of one", "-outage-at must be a fraction in (0, 1), got 1", []string{"-outage-at", "1"}},
		{"negative pause window", "-pause-after must not be negative, got -1s", []string{"-pause-after", "-1s"}},
		{"instance without a store", "-instance needs -nats or -postgres", []string{"-instance", "a"}},
		{"verify without a store", "-verify needs -nats or -postgres", []string{"-verify"}},
		{"bad instance", "InstanceID may only contain [A-Za-z0-9_-]", []string{"-nats", "nats://127.0.0.1:1", "-instance", "a.b"}},
		{"bad nats url", `-nats: scheme must be nats:// or tls://, got "http://x"`, []string{"-nats", "http://x"}},
		{"bad nats url with a token", `-nats: scheme must be nats:// or tls://, got "http://<redacted>@x"`, []string{"-nats", "http://TOKEN@x"}},
		{"bad job", `-job must be 1..57 characters of [A-Za-z0-9_-]`, []string{"-job", "a b"}},
		{"two stores", "-postgres and -nats name two stores; pass one", []string{"-postgres", "postgres://svc@db/x", "-nats", "nats://127.0.0.1:1"}},
		{"bad postgres url", "-postgres must be a postgres:// or postgresql:// URL", []string{"-postgres", "mysql://svc:hunter2@db/x"}},
		{"long job on postgres", "-job must be 1..43 characters of [A-Za-z0-9_-] on PostgreSQL", []string{"-postgres", "postgres://svc@db/x", "-job", strings.Repeat("j", 44)}},
		{"job too long for NATS on postgres", "-job must be 1..43 characters of [A-Za-z0-9_-] on PostgreSQL", []string{"-postgres", "postgres://svc@db/x", "-job", strings.Repeat("j", 58)}},
		{"bad job on postgres", `-job must be 1..43 characters of [A-Za-z0-9_-] on PostgreSQL (its ledger is the job <job>_ledger, whose schema name must fit), got "a.b"`, []string{"-postgres", "postgres://svc@db/x", "-job", "a.b"}},
		{"empty job", "-job must not be empty; omit it", []string{"-job", ""}},
		{"empty job on postgres", "-job must not be empty; omit it", []string{"-postgres", "postgres://svc@db/x", "-job="}},
		{"bad log level", `-log must be debug, info, warn, error or off, got "loud"`, []string{"-log", "loud"}},
		{"not a number", `invalid value "many" for flag -records`, []string{"-records", "many"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runInProcess(t.Context(), tt.args...)
			if code != exitBadFlags {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitBadFlags, stderr)
			}
			if !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "usage: backfill") {
				t.Fatalf("stderr lacks %q and the usage:\n%s", tt.want, stderr)
			}
			if strings.Contains(stderr, "hunter2") || stdout != "" {
				t.Fatalf("printed a password, or to stdout: %q / %q", stderr, stdout)
			}
		})
	}
}

func TestHelpExitsZero(t *testing.T) {
	code, _, stderr := runInProcess(t.Context(), "-h")
	if code != exitOK || !strings.Contains(stderr, "-crash-at") {
		t.Fatalf("-h: exit %d, want 0 and the flags:\n%s", code, stderr)
	}
}

// TestQuietSilencesLibraryLogsUnlessAsked checks that -quiet means only the
// report: the library's warnings are off unless -log asks for them.
func TestQuietSilencesLibraryLogsUnlessAsked(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "warn"},
		{[]string{"-quiet"}, "off"},
		{[]string{"-quiet", "-log", "warn"}, "warn"},
		{[]string{"-log", "info"}, "info"},
	} {
		o, err := parseFlags(tt.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if o.log != tt.want {
			t.Errorf("%q: -log %q, want %q", tt.args, o.log, tt.want)
		}
	}
}

// TestFleetLosesNothingAcrossACrash runs the program in process: three
// workers on an embedded NATS server, one crashing at 40%.
func TestFleetLosesNothingAcrossACrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, stderr := runInProcess(t.Context(), "-workers", "3", "-splits", "8", "-records", "20000", "-pace", "1000", "-data", dir, "-log", "off")
	t.Log(out + stderr)
	if code != exitOK {
		t.Fatalf("exit %d, want 0", code)
	}
	if reportLine(t, out, "planned:") != "20000 records in 8 splits" || reportLine(t, out, "lost:") != "0" ||
		!strings.HasPrefix(reportLine(t, out, "delivered:"), "20000 records at least once") {
		t.Fatal("not every planned record was delivered")
	}
	deliveries := regexp.MustCompile(`\(([0-9]+) deliveries in all\)`).FindStringSubmatch(out)
	if deliveries == nil || reportLine(t, out, "this process:") != deliveries[1]+" deliveries" {
		t.Fatal("this process's deliveries are not the job's: the ledger lost some")
	}
	if n := strings.Count(out, "  crashed\n"); n != 1 || strings.Count(out, "  completed\n") != 2 {
		t.Fatalf("%d crashed workers, want 1 crashed and 2 completed", n)
	}
	if !strings.Contains(out, "CRASH: ") || !regexp.MustCompile(`crash: +w[0-9] aborted holding [0-9]+ splits; [0-9]+ recovered`).MatchString(out) {
		t.Fatal("the output tells of no crash")
	}
	// A survivor resumes a crashed worker's split at its last commit: "took
	// over" when the crashed worker had delivered past it, "exactly where"
	// when the crash fell right after a commit.
	if !regexp.MustCompile(` took over [_a-z0-9-]+ from w[0-9] | resumed [_a-z0-9-]+ at record [0-9]+, exactly where w[0-9] `).MatchString(out) {
		t.Fatal("the output tells of no takeover of the crashed worker's splits")
	}
	// At most one commit interval (500 records at 1,000/s) replays per
	// split the crashed worker held, with a batch of slack for the
	// in-flight one.
	held, _ := strconv.Atoi(regexp.MustCompile(`aborted holding ([0-9]+) splits`).FindStringSubmatch(out)[1])
	dups, _ := strconv.Atoi(strings.Fields(reportLine(t, out, "duplicates:"))[0])
	if bound := held * (500 + 100); dups > bound {
		t.Errorf("%d duplicates, want at most %d (%d splits held by the crashed worker)", dups, bound, held)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the embedded store of a completed job was not removed: %v", err)
	}
}

func TestFleetLosesNothingAcrossANATSOutage(t *testing.T) {
	t.Parallel()
	code, out, stderr := runInProcess(t.Context(), "-workers", "3", "-splits", "8", "-records", "20000", "-pace", "1000", "-crash-at", "0",
		"-outage", "2s", "-outage-at", "0.3", "-data", t.TempDir(), "-log", "off")
	t.Log(out + stderr)
	if code != exitOK || reportLine(t, out, "lost:") != "0" {
		t.Fatalf("exit %d; want 0 and lost: 0", code)
	}
	// A split replays at most what a lane reads in two commit intervals
	// and one OpTimeout (2 s at 1,000 records/s) per move; each split
	// moves at most once for one outage.
	dups, _ := strconv.Atoi(strings.Fields(reportLine(t, out, "duplicates:"))[0])
	if bound := 8 * 1000 * int(2*commitEvery+opTimeout) / int(time.Second); dups > bound {
		t.Errorf("%d duplicates, want at most %d", dups, bound)
	}
	for _, want := range []string{"OUTAGE: NATS stopped at ", "OUTAGE over: NATS restarted on the same store"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// jobArgs are the flags of the small job the process tests run.
func jobArgs(url, job string, more ...string) []string {
	return append([]string{"-nats", url, "-job", job, "-splits", "8", "-records", "10000", "-pace", "500", "-log", "off"}, more...)
}

// TestProcessesDivideOneJob runs two processes, -instance a and -instance
// b, against one NATS server: both must finish with status 0, both must
// have delivered a part, and each proves from the ledger that the whole
// job lost nothing.
func TestProcessesDivideOneJob(t *testing.T) {
	t.Parallel()
	srv := embeddedT(t)
	a := start(t, jobArgs(srv.url, "divide", "-instance", "a", "-quiet")...)
	b := start(t, jobArgs(srv.url, "divide", "-instance", "b", "-quiet")...)
	for name, p := range map[string]*process{"a": a, "b": b} {
		code, out := p.wait(t)
		t.Logf("instance %s:\n%s", name, out)
		if code != 0 || reportLine(t, out, "lost:") != "0" {
			t.Fatalf("instance %s exited %d; want 0 and lost: 0", name, code)
		}
		if got := reportLine(t, out, "this process:"); got == "0 deliveries" {
			t.Fatalf("instance %s delivered nothing: the job was not divided", name)
		}
	}
}

// TestKill9ThenVerifyProvesNoLoss kills one of two processes with SIGKILL
// midway: the survivor takes its splits over and says so, and a -verify
// run proves from the ledger alone that no record was lost.
func TestKill9ThenVerifyProvesNoLoss(t *testing.T) {
	t.Parallel()
	srv := embeddedT(t)
	sink := ledgerT(t, srv.url, "kill9")
	ds := newDataset(8, 10_000, false)
	a := start(t, jobArgs(srv.url, "kill9", "-instance", "a")...)
	b := start(t, jobArgs(srv.url, "kill9", "-instance", "b")...)
	eventually(t, "both processes delivering", func() bool {
		by := tallyOf(ds, sink.snapshot()).byWorker
		return by["a"] > 0 && by["b"] > 0
	})
	// Kill the process its start line names, as the README tells a user to.
	pid := regexp.MustCompile(`^backfill pid ([0-9]+) `).FindStringSubmatch(a.stdout.String())
	if pid == nil || pid[1] != strconv.Itoa(a.cmd.Process.Pid) {
		t.Fatalf("a's start line names pid %v, want %d:\n%s", pid, a.cmd.Process.Pid, a.stdout.String())
	}
	a.signal(t, syscall.SIGKILL)
	if code, _ := a.wait(t); code != -1 {
		t.Fatalf("killed process exited %d, want -1 (killed by a signal)", code)
	}
	code, out := b.wait(t)
	t.Logf("survivor b:\n%s", out)
	if code != 0 || reportLine(t, out, "lost:") != "0" {
		t.Fatalf("survivor exited %d; want 0 and lost: 0", code)
	}
	if !regexp.MustCompile(`b took over part-[0-9]+ from a at record|b resumed part-[0-9]+ at record [0-9]+, exactly where a stopped`).MatchString(out) {
		t.Fatal("the survivor does not tell of taking over a's splits")
	}

	code, stdout, stderr := runInProcess(t.Context(), jobArgs(srv.url, "kill9", "-verify")...)
	t.Logf("-verify:\n%s%s", stdout, stderr)
	if code != 0 || reportLine(t, stdout, "lost:") != "0" {
		t.Fatalf("-verify exited %d; want 0 and lost: 0", code)
	}
	if !regexp.MustCompile(`(?m)^worker: +a +[0-9.]+% +[1-9][0-9]* records +other process$`).MatchString(stdout) {
		t.Fatal("-verify does not count the killed process's deliveries")
	}
}

// TestSIGTERMThenRerunResumes stops a process with SIGTERM: it exits 3 and
// says how to resume; a rerun delivers only what was left, with no replay.
func TestSIGTERMThenRerunResumes(t *testing.T) {
	t.Parallel()
	srv := embeddedT(t)
	sink := ledgerT(t, srv.url, "term")
	ds := newDataset(8, 10_000, false)
	first := start(t, jobArgs(srv.url, "term", "-instance", "a", "-quiet")...)
	eventually(t, "records delivered", func() bool { return tallyOf(ds, sink.snapshot()).delivered >= 1000 })
	first.signal(t, syscall.SIGTERM)
	code, out := first.wait(t)
	t.Logf("first run:\n%s", out)
	if code != exitInterrupted || !strings.Contains(out, "result:          interrupted; run again to resume\n") {
		t.Fatalf("SIGTERM: exit %d, want 3 and the resume hint", code)
	}
	if strings.Contains(out, "FAILED") || strings.Contains(out, "lost:") {
		t.Fatal("an interrupted run reports failure or loss")
	}
	if err := sink.refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	before := tallyOf(ds, sink.snapshot())

	second := start(t, jobArgs(srv.url, "term", "-instance", "a", "-quiet")...)
	code, out = second.wait(t)
	t.Logf("rerun:\n%s", out)
	if code != 0 || reportLine(t, out, "lost:") != "0" || reportLine(t, out, "duplicates:") != "0" {
		t.Fatalf("rerun: exit %d; want 0, lost 0 and no duplicates after a clean stop", code)
	}
	if got, want := reportLine(t, out, "this process:"), strconv.FormatInt(before.planned-before.delivered, 10)+" deliveries"; got != want {
		t.Fatalf("rerun delivered %s, want %s: only what the first run left", got, want)
	}
}

// TestAnInterruptedEmbeddedRunResumesWithData interrupts an in-process run
// on its embedded server once it prints progress: the report names the
// -data directory to resume from, and a run given it delivers only what
// was left.
func TestAnInterruptedEmbeddedRunResumesWithData(t *testing.T) {
	t.Parallel()
	args := []string{"-workers", "2", "-splits", "4", "-records", "2000", "-pace", "200", "-crash-at", "0", "-log", "off"}
	ctx, interrupt := context.WithCancel(t.Context())
	defer interrupt()
	var out, errs buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, &out, &errs) }()
	eventually(t, "a progress line", func() bool { return strings.Contains(out.String(), "] job ") })
	interrupt() // as SIGINT does
	code := <-done
	t.Log(out.String() + errs.String())
	m := regexp.MustCompile(`interrupted; run again with -data (\S+) to resume`).FindStringSubmatch(out.String())
	if code != exitInterrupted || m == nil {
		t.Fatalf("exit %d, want 3 and the -data to resume from", code)
	}
	t.Cleanup(func() { _ = os.RemoveAll(m[1]) })
	left, _ := strconv.Atoi(strings.Fields(reportLine(t, out.String(), "remaining:"))[0])
	code, rerun, _ := runInProcess(t.Context(), append(args, "-quiet", "-data", m[1])...)
	t.Log(rerun)
	if code != exitOK || reportLine(t, rerun, "this process:") != strconv.Itoa(left)+" deliveries" {
		t.Fatalf("resumed run: exit %d; want 0 and %d deliveries, what the first run left", code, left)
	}
}

func TestUnreachableNATSSaysSo(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runInProcess(t.Context(), "-nats", "nats://svc:hunter2@127.0.0.1:1", "-instance", "a", "-quiet")
	if code != exitFailed {
		t.Fatalf("exit %d, want 1", code)
	}
	if want := "NATS at nats://<redacted>@127.0.0.1:1"; !strings.Contains(stderr, want) || !strings.Contains(stderr, "no servers available") {
		t.Fatalf("stderr lacks %q and why:\n%s", want, stderr)
	}
	if strings.Contains(stderr, "hunter2") || stdout != "" {
		t.Fatalf("stderr shows the URL's password, or a report was printed:\n%s%s", stdout, stderr)
	}
}

// TestUnreachablePostgresSaysNothingWasWritten runs a worker against a
// PostgreSQL port nothing listens on: it fails at once saying that no
// connection could be made and nothing was written, with the store's
// advice once, never NATS's, and never the DSN's password.
func TestUnreachablePostgresSaysNothingWasWritten(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // refused from now on
	code, stdout, stderr := runInProcess(t.Context(), "-postgres", "postgres://svc:hunter2@"+addr+"/db?sslmode=disable", "-instance", "a", "-quiet")
	if code != exitFailed {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{"PostgreSQL at postgres://svc:<redacted>@" + addr, "connection refused", "nothing was written", "check that the server runs"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Count(stderr, "host and port") != 1 {
		t.Errorf("stderr does not give its advice once:\n%s", stderr)
	}
	for _, bad := range []string{"may have landed", "NATS", "hunter2"} {
		if strings.Contains(stderr, bad) || stdout != "" {
			t.Errorf("stderr says %q, or a report was printed:\n%s%s", bad, stdout, stderr)
		}
	}
}

// TestVerifyOfAMissingJobCreatesNothing runs -verify for a job that does
// not exist: it exits 1 naming the job and how it was chosen, prints no
// report, and leaves the server's buckets as they were.
func TestVerifyOfAMissingJobCreatesNothing(t *testing.T) {
	t.Parallel()
	srv := embeddedT(t)
	ledgerT(t, srv.url, "other") // a job that does exist
	defaultJob := jobName(newDataset(64, 1_000_000, false).planner())
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"-nats", srv.url, "-verify"}, []string{`-verify: no ledger of job "` + defaultJob + `"`, "looked for the job of -splits 64 -records 1000000"}},
		{[]string{"-nats", srv.url, "-verify", "-job", "nope"}, []string{`-verify: no ledger of job "nope"`, "looked for the -job given"}},
	} {
		code, stdout, stderr := runInProcess(t.Context(), tt.args...)
		for _, want := range tt.want {
			if !strings.Contains(stderr, want) {
				t.Errorf("%q: stderr lacks %q:\n%s", tt.args, want, stderr)
			}
		}
		if code != exitFailed || stdout != "" {
			t.Errorf("%q: exit %d, want 1 and no report:\n%s", tt.args, code, stdout)
		}
	}
	want := []string{"KV_coordination_other_ledger_lease", "KV_coordination_other_ledger_state"}
	if got := streams(t, srv.url); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("streams after -verify: %v, want %v", got, want)
	}
}

// TestFleetOnAnExternalServerCleansUp runs a whole fleet against a server
// given by -nats: a completed run removes the job, ledger included.
func TestFleetOnAnExternalServerCleansUp(t *testing.T) {
	t.Parallel()
	srv := embeddedT(t)
	code, stdout, stderr := runInProcess(t.Context(), "-nats", srv.url, "-workers", "2", "-splits", "4", "-records", "2000", "-crash-at", "0", "-pace", "4000", "-quiet")
	if code != 0 || reportLine(t, stdout, "lost:") != "0" {
		t.Fatalf("exit %d, want 0 and lost: 0\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stdout, "[") {
		t.Fatalf("-quiet printed progress:\n%s", stdout)
	}
	if got := streams(t, srv.url); len(got) > 0 {
		t.Fatalf("streams left behind: %v", got)
	}
}

// streams returns the names of the streams on the NATS server at url,
// sorted.
func streams(t testing.TB, url string) []string {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	l := js.StreamNames(t.Context())
	for name := range l.Name() {
		names = append(names, name)
	}
	if l.Err() != nil {
		t.Fatal(l.Err())
	}
	slices.Sort(names)
	return names
}
