package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spate-go/coordination/internal/examplekit/exampletest"
)

func TestMain(m *testing.M) { exampletest.Main(m, main) }

func TestBadFlagsExitTwoWithUsage(t *testing.T) {
	exampletest.CheckBadFlags(t, run, "backfill", []exampletest.BadFlag{
		{Name: "unknown flag", Args: []string{"-bogus"}, Want: "flag provided but not defined: -bogus"},
		{Name: "stray argument", Args: []string{"now"}, Want: `unexpected argument "now"`},
		{Name: "no workers", Args: []string{"-workers", "0"}, Want: "-workers must be 1..64, got 0"},
		{Name: "no splits", Args: []string{"-splits", "0"}, Want: "-splits must be 1..100000, got 0"},
		{Name: "negative records", Args: []string{"-records", "-1"}, Want: "-records must be 0..100000000, got -1"},
		{Name: "crash fraction of one", Args: []string{"-crash-at", "1"}, Want: "-crash-at must be a fraction in [0, 1), got 1"},
		{Name: "crash with one worker", Args: []string{"-workers", "1"}, Want: "-crash-at needs at least 2 workers"},
		{Name: "no pace", Args: []string{"-pace", "0"}, Want: "-pace must be at least 1"},
		{Name: "no timeout", Args: []string{"-timeout", "0s"}, Want: "-timeout must be positive"},
		{Name: "negative outage", Args: []string{"-outage", "-1s"}, Want: "-outage must not be negative, got -1s"},
		{Name: "outage on external nats", Args: []string{"-outage", "2s", "-nats", "nats://127.0.0.1:1"}, Want: "-outage stops the embedded NATS server"},
		{Name: "outage fraction of one", Args: []string{"-outage-at", "1"}, Want: "-outage-at must be a fraction in (0, 1), got 1"},
		{Name: "negative pause window", Args: []string{"-pause-after", "-1s"}, Want: "-pause-after must not be negative, got -1s"},
		{Name: "instance without nats", Args: []string{"-instance", "a"}, Want: "-instance needs -nats"},
		{Name: "verify without nats", Args: []string{"-verify"}, Want: "-verify needs -nats"},
		{Name: "bad instance", Args: []string{"-nats", "nats://127.0.0.1:1", "-instance", "a.b"}, Want: "InstanceID may only contain [A-Za-z0-9_-]"},
		{Name: "bad nats url", Args: []string{"-nats", "http://x"}, Want: `-nats: scheme must be nats:// or tls://, got "http://x"`},
		{Name: "bad nats url with a token", Args: []string{"-nats", "http://TOKEN@x"}, Want: `-nats: scheme must be nats:// or tls://, got "http://<redacted>@x"`},
		{Name: "comma in a password", Args: []string{"-nats", "nats://svc:pa,ss@x"}, Want: `-nats: the client splits it at commas into 2 URLs, and in URL 1 the URL does not parse (write a comma inside a password or token as %2C), got "nats://<redacted>@x"`},
		{Name: "bad job", Args: []string{"-job", "a b"}, Want: "natsstore: Job must be 1..64 characters"},
		{Name: "two stores", Args: []string{"-postgres", "postgres://svc@db/x", "-nats", "nats://127.0.0.1:1"}, Want: "-postgres and -nats name two stores; pass one"},
		{Name: "bad postgres url", Args: []string{"-postgres", "mysql://svc:hunter2@db/x"}, Want: "-postgres must be a postgres:// URL"},
		{Name: "outage on postgres", Args: []string{"-postgres", "postgres://svc@db/x", "-outage", "2s"}, Want: "cannot be used with -postgres"},
		{Name: "long job on postgres", Args: []string{"-postgres", "postgres://svc@db/x", "-job", strings.Repeat("j", 44)}, Want: "-job must be at most 43 characters on PostgreSQL"},
		{Name: "bad log level", Args: []string{"-log", "loud"}, Want: `-log must be debug, info, warn, error or off, got "loud"`},
		{Name: "not a number", Args: []string{"-records", "many"}, Want: `invalid value "many" for flag -records`},
	})
}

func TestHelpExitsZero(t *testing.T) { exampletest.CheckHelp(t, run, "-crash-at") }

// TestFleetLosesNothingAcrossACrash runs the program's main logic in process:
// three workers on an embedded NATS server, one crashing at 40%.
func TestFleetLosesNothingAcrossACrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := &options{Common: quietCommon(90 * time.Second), workers: 3, splits: 8, records: 20_000, crashAt: 0.4, pace: 1000, data: dir, audit: true}
	var out exampletest.Buffer
	rep, err := backfill(t.Context(), o, modePlain, &out, &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep.write(&out)
	t.Log(out.String())
	if rep.Outcome != outcomeOK {
		t.Fatal("run failed")
	}
	if rep.Planned != 20_000 || rep.Splits != 8 || rep.Delivered != 20_000 || rep.Lost() != 0 {
		t.Fatalf("planned %d in %d splits, delivered %d, lost %d; want 20000, 8, 20000, 0",
			rep.Planned, rep.Splits, rep.Delivered, rep.Lost())
	}
	if rep.Deliveries != rep.Delivered+rep.Duplicates || rep.Local != rep.Deliveries {
		t.Fatalf("deliveries %d != delivered %d + duplicates %d, or != this process's %d", rep.Deliveries, rep.Delivered, rep.Duplicates, rep.Local)
	}
	states := map[string]int{}
	var sum int64
	for _, w := range rep.Workers {
		states[w.State]++
		sum += w.Deliveries
	}
	if states["crashed"] != 1 || states["completed"] != 2 {
		t.Fatalf("worker states %v, want 1 crashed and 2 completed", states)
	}
	if sum != rep.Deliveries {
		t.Fatalf("worker shares add up to %d, want %d", sum, rep.Deliveries)
	}
	if !strings.Contains(rep.Crash, "aborted holding") || rep.Takeovers == 0 {
		t.Fatalf("crash summary %q, %d takeovers", rep.Crash, rep.Takeovers)
	}
	// A survivor resumes a crashed worker's split at its last commit: "took
	// over" when the crashed worker had delivered past it, "exactly where"
	// when the crash fell right after a commit.
	if !regexp.MustCompile(` took over part-[0-9]+ from | resumed part-[0-9]+ at record [0-9]+, exactly where `).MatchString(out.String()) {
		t.Fatal("output tells of no takeover of the crashed worker's splits")
	}
	for _, want := range []string{"CRASH: ", "lost:        0\n", "audit:       violations: 0 (", "result:      OK"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q", want)
		}
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if len(l) > lineWidth {
			t.Errorf("a -plain line is %d columns, over %d: %q", len(l), lineWidth, l)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the embedded store of a completed job was not removed: %v", err)
	}
}

func TestFleetLosesNothingAcrossANATSOutage(t *testing.T) {
	t.Parallel()
	o := &options{Common: quietCommon(90 * time.Second), workers: 3, splits: 8, records: 20_000, outage: 2 * time.Second, outageAt: 0.3, pace: 1000,
		data: t.TempDir()}
	var out exampletest.Buffer
	rep, err := backfill(t.Context(), o, modePlain, &out, &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep.write(&out)
	t.Log(out.String())
	if rep.Outcome != outcomeOK || rep.Delivered != 20_000 || rep.Lost() != 0 {
		t.Fatalf("outcome %v, delivered %d, lost %d; want OK, 20000, 0", rep.Outcome, rep.Delivered, rep.Lost())
	}
	// A split replays at most what a lane reads in two commit intervals and
	// one OpTimeout (2 s at 1,000 records/s) per move; each split moves at
	// most once for one outage.
	if bound := int64(o.splits) * o.pace * int64(2*commitEvery+opTimeout) / int64(time.Second); rep.Duplicates > bound {
		t.Errorf("%d duplicates, want at most %d", rep.Duplicates, bound)
	}
	for _, want := range []string{"OUTAGE: NATS stopped at ", "OUTAGE over: NATS restarted on the same store", "result:      OK"} {
		if !strings.Contains(out.String(), want) {
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
// have delivered a part, and each proves from the ledger that the whole job
// lost nothing.
func TestProcessesDivideOneJob(t *testing.T) {
	t.Parallel()
	srv := embedded(t)
	a := exampletest.Start(t, jobArgs(srv.URL(), "divide", "-instance", "a", "-quiet"))
	b := exampletest.Start(t, jobArgs(srv.URL(), "divide", "-instance", "b", "-quiet"))
	for name, p := range map[string]*exampletest.Process{"a": a, "b": b} {
		code, out := p.Wait(t)
		t.Logf("instance %s:\n%s", name, out)
		if code != 0 {
			t.Fatalf("instance %s exited %d", name, code)
		}
		if got := exampletest.ReportLine(t, out, "lost:"); got != "0" {
			t.Fatalf("instance %s: lost: %s", name, got)
		}
		if got := exampletest.ReportLine(t, out, "this process:"); got == "0 deliveries" {
			t.Fatalf("instance %s delivered nothing: the job was not divided", name)
		}
	}
}

// TestKill9ThenVerifyProvesNoLoss kills one of two processes with SIGKILL
// midway: the survivor takes its splits over and says so, and a -verify run
// proves from the ledger alone that no record was lost.
func TestKill9ThenVerifyProvesNoLoss(t *testing.T) {
	t.Parallel()
	srv := embedded(t)
	sink := testLedger(t, srv, "kill9")
	ds := newDataset(8, 10_000)
	a := exampletest.Start(t, jobArgs(srv.URL(), "kill9", "-instance", "a", "-plain"))
	b := exampletest.Start(t, jobArgs(srv.URL(), "kill9", "-instance", "b", "-plain"))
	eventually(t, "both processes delivering", func() bool {
		by := tallyOf(ds, sink.snapshot()).byWorker
		return by["a"] > 0 && by["b"] > 0
	})
	// Kill the process its start line names, as the README tells a user to.
	pid := regexp.MustCompile(`^backfill pid ([0-9]+) `).FindStringSubmatch(a.Stdout.String())
	if pid == nil || pid[1] != strconv.Itoa(a.Cmd.Process.Pid) {
		t.Fatalf("a's start line names pid %v, want %d:\n%s", pid, a.Cmd.Process.Pid, a.Stdout.String())
	}
	a.Signal(t, syscall.SIGKILL)
	if code, _ := a.Wait(t); code != -1 {
		t.Fatalf("killed process exited %d, want -1 (killed by a signal)", code)
	}
	code, out := b.Wait(t)
	t.Logf("survivor b:\n%s", out)
	if code != 0 {
		t.Fatalf("survivor exited %d", code)
	}
	if !regexp.MustCompile(`b took over part-[0-9]+ from a at record|b resumed part-[0-9]+ at record [0-9]+, exactly where a stopped`).MatchString(out) {
		t.Fatal("the survivor does not tell of taking over a's splits")
	}
	if !strings.Contains(out, "lost:        0\n") {
		t.Fatal("the survivor does not prove lost: 0")
	}

	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), jobArgs(srv.URL(), "kill9", "-verify"), &stdout, &stderr); code != 0 {
		t.Fatalf("-verify exited %d:\n%s%s", code, stdout.String(), stderr.String())
	}
	t.Logf("-verify:\n%s", stdout.String())
	if got := exampletest.ReportLine(t, stdout.String(), "lost:"); got != "0" {
		t.Fatalf("-verify: lost: %s", got)
	}
	if !regexp.MustCompile(`(?m)^worker: +a +[0-9.]+% +[1-9][0-9]* records +other process$`).MatchString(stdout.String()) {
		t.Fatalf("-verify does not count the killed process's deliveries:\n%s", stdout.String())
	}
}

// TestSIGTERMThenRerunResumes stops a process with SIGTERM: it exits 3 and
// says how to resume; a rerun delivers only what was left, with no replay.
func TestSIGTERMThenRerunResumes(t *testing.T) {
	t.Parallel()
	srv := embedded(t)
	sink := testLedger(t, srv, "term")
	ds := newDataset(8, 10_000)
	first := exampletest.Start(t, jobArgs(srv.URL(), "term", "-instance", "a", "-quiet"))
	eventually(t, "records delivered", func() bool { return tallyOf(ds, sink.snapshot()).delivered >= 1000 })
	first.Signal(t, syscall.SIGTERM)
	code, out := first.Wait(t)
	t.Logf("first run:\n%s", out)
	if code != 3 || !strings.Contains(out, "result:      interrupted; run again to resume\n") {
		t.Fatalf("SIGTERM: exit %d, want 3 and the resume hint", code)
	}
	if strings.Contains(out, "FAILED") || strings.Contains(out, "lost:") {
		t.Fatal("an interrupted run reports failure or loss")
	}
	if err := sink.refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	before := tallyOf(ds, sink.snapshot())

	second := exampletest.Start(t, jobArgs(srv.URL(), "term", "-instance", "a", "-quiet"))
	code, out = second.Wait(t)
	t.Logf("rerun:\n%s", out)
	if code != 0 || exampletest.ReportLine(t, out, "lost:") != "0" || exampletest.ReportLine(t, out, "duplicates:") != "0" {
		t.Fatalf("rerun: exit %d; want 0, lost 0 and no duplicates after a clean stop", code)
	}
	if got, want := exampletest.ReportLine(t, out, "this process:"), count(before.planned-before.delivered, "delivery"); got != want {
		t.Fatalf("rerun delivered %s, want %s: only what the first run left", got, want)
	}
}

func TestUnreachableNATSSaysSo(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-nats", "nats://svc:hunter2@127.0.0.1:1", "-instance", "a", "-quiet"}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if want := "NATS at nats://<redacted>@127.0.0.1:1 is unreachable"; !strings.Contains(stderr.String(), want) {
		t.Fatalf("stderr lacks %q:\n%s", want, stderr.String())
	}
	if strings.Contains(stderr.String(), "hunter2") {
		t.Fatalf("stderr shows the URL's password:\n%s", stderr.String())
	}
	if stdout.Len() != 0 {
		t.Fatalf("printed a report for a run that never started:\n%s", stdout.String())
	}
}

// TestFleetOnAnExternalServerCleansUp runs a whole fleet against a server
// given by -nats: a completed run removes the job's buckets, ledger included.
func TestFleetOnAnExternalServerCleansUp(t *testing.T) {
	t.Parallel()
	srv := embedded(t)
	var stdout, stderr bytes.Buffer
	args := []string{"-nats", srv.URL(), "-workers", "2", "-splits", "4", "-records", "2000", "-crash-at", "0", "-pace", "4000", "-quiet", "-log", "off"}
	if code := run(t.Context(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if got := exampletest.ReportLine(t, stdout.String(), "lost:"); got != "0" {
		t.Fatalf("lost: %s", got)
	}
	if strings.Contains(stdout.String(), "[") {
		t.Fatalf("-quiet printed progress:\n%s", stdout.String())
	}
	for _, name := range bucketNames(t, srv) {
		t.Errorf("bucket %s left behind", name)
	}
}

func TestMetricsAreServed(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := workerConfig("w1", discardLogger(), reg)
	if cfg.Metrics == nil {
		t.Fatal("workerConfig did not pass the registry as Config.Metrics")
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("worker config: %v", err)
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "backfill_test_gauge", Help: "test"})
	reg.MustRegister(g)
	g.Set(7)
	bound, stop, err := serveMetrics("127.0.0.1:0", reg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + bound + "/metrics")
	if err != nil {
		stop()
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	stop()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "backfill_test_gauge 7") {
		t.Fatalf("scrape lacks the gauge:\n%s", body)
	}
	if _, err := http.Get("http://" + bound + "/metrics"); err == nil {
		t.Fatal("metrics still served after stop")
	}
	if _, _, err := serveMetrics("256.0.0.1:1", reg); err == nil || !strings.Contains(err.Error(), "-metrics") {
		t.Fatalf("bad address: %v", err)
	}
}
