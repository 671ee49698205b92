package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

func TestBadFlagsExitTwoWithUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "unknown flag", args: []string{"-bogus"}, want: "flag provided but not defined: -bogus"},
		{name: "stray argument", args: []string{"now"}, want: `unexpected argument "now"`},
		{name: "no workers", args: []string{"-workers", "0"}, want: "-workers must be 1..64, got 0"},
		{name: "no splits", args: []string{"-splits", "0"}, want: "-splits must be 1..100000, got 0"},
		{name: "negative records", args: []string{"-records", "-1"}, want: "-records must be 0..100000000, got -1"},
		{name: "crash fraction of one", args: []string{"-crash-at", "1"}, want: "-crash-at must be a fraction in [0, 1), got 1"},
		{name: "crash with one worker", args: []string{"-workers", "1"}, want: "-crash-at needs at least 2 workers"},
		{name: "no pace", args: []string{"-pace", "0"}, want: "-pace must be at least 1"},
		{name: "instance without nats", args: []string{"-instance", "a"}, want: "-instance needs -nats"},
		{name: "bad instance", args: []string{"-nats", "nats://127.0.0.1:1", "-instance", "a.b"}, want: "InstanceID may only contain [A-Za-z0-9_-]"},
		{name: "bad nats url", args: []string{"-nats", "http://x"}, want: `-nats must be a nats:// or tls:// URL, got "http://x"`},
		{name: "bad job", args: []string{"-job", "a b"}, want: "natsstore: Job must be 1..64 characters"},
		{name: "bad log level", args: []string{"-log", "loud"}, want: `-log must be debug, info, warn, error or off, got "loud"`},
		{name: "not a number", args: []string{"-records", "many"}, want: `invalid value "many" for flag -records`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), tt.args, &stdout, &stderr); code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) || !strings.Contains(stderr.String(), "usage: backfill") {
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
	if !strings.Contains(stderr.String(), "-crash-at") {
		t.Fatalf("help lacks the flags:\n%s", stderr.String())
	}
}

// TestFleetLosesNothingAcrossACrash runs the program's main logic in process:
// three workers on an embedded NATS server, one crashing at 40%.
func TestFleetLosesNothingAcrossACrash(t *testing.T) {
	t.Parallel()
	o := &options{workers: 3, splits: 8, records: 20_000, crashAt: 0.4, pace: 1000, timeout: 90 * time.Second, logLevel: "off"}
	var out bytes.Buffer
	rep, err := backfill(t.Context(), o, modePlain, &syncWriter{w: &out}, &out)
	if err != nil {
		t.Fatal(err)
	}
	rep.write(&out)
	t.Log(out.String())
	if !rep.ok() {
		t.Fatal("run failed")
	}
	if rep.Planned != 20_000 || rep.Splits != 8 || rep.Delivered != 20_000 || rep.Lost != 0 {
		t.Fatalf("planned %d in %d splits, delivered %d, lost %d; want 20000, 8, 20000, 0",
			rep.Planned, rep.Splits, rep.Delivered, rep.Lost)
	}
	if rep.Deliveries != rep.Delivered+rep.Duplicates {
		t.Fatalf("deliveries %d != delivered %d + duplicates %d", rep.Deliveries, rep.Delivered, rep.Duplicates)
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
	if !strings.Contains(rep.Crash, "aborted holding") {
		t.Fatalf("crash summary %q", rep.Crash)
	}
	for _, want := range []string{"CRASH: ", "lost:        0\n", "result:      OK"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q", want)
		}
	}
}

// syncWriter serialises writes from the display and the event log.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// TestProcessesDivideOneJob builds the program and runs two processes,
// -instance a and -instance b, against one NATS server: both must finish with
// status 0, and together they must have delivered every record.
func TestProcessesDivideOneJob(t *testing.T) {
	t.Parallel()
	srv, err := startEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })

	// go test puts its own toolchain first on PATH.
	bin := filepath.Join(t.TempDir(), "backfill")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	const records = 20_000
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	type result struct {
		name   string
		out    string
		err    error
		ranges []recordRange
	}
	results := make([]result, 2)
	var wg sync.WaitGroup
	for i, name := range []string{"a", "b"} {
		wg.Go(func() {
			cmd := exec.CommandContext(ctx, bin, "-nats", srv.URL(), "-instance", name,
				"-splits", "8", "-records", fmt.Sprint(records), "-pace", "1000", "-quiet", "-log", "off")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			results[i] = result{name: name, out: stdout.String() + stderr.String(), err: err}
		})
	}
	wg.Wait()

	var all []recordRange
	for i, r := range results {
		t.Logf("instance %s:\n%s", r.name, r.out)
		if r.err != nil {
			t.Fatalf("instance %s: %v", r.name, r.err)
		}
		line := reportLine(t, r.out, "ranges:")
		rs, err := parseRanges(line)
		if err != nil {
			t.Fatalf("instance %s: %v", r.name, err)
		}
		if len(rs) == 0 {
			t.Fatalf("instance %s delivered nothing: the job was not divided", r.name)
		}
		results[i].ranges = rs
		all = append(all, rs...)
	}
	slices.SortFunc(all, func(a, b recordRange) int { return int(a.Start - b.Start) })
	var covered int64
	for _, r := range all {
		if r.Start > covered {
			t.Fatalf("records %d-%d were delivered by neither process (lost)", covered, r.Start)
		}
		covered = max(covered, r.End)
	}
	if covered != records {
		t.Fatalf("records %d-%d were delivered by neither process (lost)", covered, records)
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

// TestFleetOnAnExternalServerCleansUp runs a whole fleet against a server
// given by -nats: the run uses a fresh job name and removes its buckets.
func TestFleetOnAnExternalServerCleansUp(t *testing.T) {
	t.Parallel()
	srv, err := startEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	var stdout, stderr bytes.Buffer
	args := []string{"-nats", srv.URL(), "-workers", "2", "-splits", "4", "-records", "2000", "-crash-at", "0", "-pace", "4000", "-quiet", "-log", "off"}
	if code := run(t.Context(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if got := reportLine(t, stdout.String(), "lost:"); got != "0" {
		t.Fatalf("lost: %s", got)
	}
	if strings.Contains(stdout.String(), "[") {
		t.Fatalf("-quiet printed progress:\n%s", stdout.String())
	}
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for name := range js.KeyValueStoreNames(t.Context()).Name() {
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
