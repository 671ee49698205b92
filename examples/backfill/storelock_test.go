package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spate-go/coordination/internal/examplekit/exampletest"
)

// TestTwoRunsOfOneJobDoNotCollide starts the same job twice on one machine
// (one temp dir), the second while the first runs, as two terminals would:
// the second must not resume the first one's ledger, must say whose store
// it found in use and use one of its own, and must end within its -timeout,
// shutdown included. A third naming the first one's store with -data is
// refused at once. The first must complete undisturbed: every record
// delivered exactly once, its store removed.
func TestTwoRunsOfOneJobDoNotCollide(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	env := "TMPDIR=" + tmp
	// -runtime-split=false: the test needs the first run to outlast the
	// second, which idle lanes cutting its splits would shorten.
	args := []string{"-workers", "2", "-splits", "4", "-records", "12000", "-pace", "600", "-crash-at", "0", "-plain", "-log", "off", "-audit=false", "-runtime-split=false"}
	jobDir := filepath.Join(tmp, "spate-"+jobName(planner{ds: newDataset(4, 12_000)}.Fingerprint()))

	first := exampletest.Start(t, args, env)
	pid := fmt.Sprintf("pid %d,", first.Cmd.Process.Pid)
	exampletest.Eventually(t, "the first run holding the job's store", func() bool {
		b, _ := os.ReadFile(filepath.Join(jobDir, lockName))
		return strings.Contains(string(b), pid)
	})

	const timeout = 6 * time.Second
	start := time.Now()
	second := exampletest.Start(t, append(args, "-timeout", timeout.String()), env)
	code, out := second.Wait(t)
	took := time.Since(start)
	t.Logf("second run (%s):\n%s", took, out)
	if code != 1 {
		t.Errorf("second run exited %d, want 1 (it gave up at -timeout)", code)
	}
	if took > timeout+5*time.Second {
		t.Errorf("second run took %s, beyond its -timeout %s", took, timeout)
	}
	for _, want := range []string{"the job's store " + jobDir + " is in use by another backfill run (" + pid, "this run uses a store of its own", "gave up after -timeout 6s"} {
		if !strings.Contains(out, want) {
			t.Errorf("second run's output lacks %q", want)
		}
	}
	if strings.Contains(out, "resuming") {
		t.Error("the second run resumed the first one's ledger")
	}

	third := exampletest.Start(t, append(args, "-data", jobDir), env)
	code, out = third.Wait(t)
	t.Logf("third run:\n%s", out)
	if want := "-data: store " + jobDir + " is in use by another backfill run (" + pid; code != 1 || !strings.Contains(out, want) {
		t.Errorf("third run, on the first one's -data: exit %d, want 1 and %q", code, want)
	}

	code, out = first.Wait(t)
	t.Logf("first run:\n%s", out)
	if code != 0 || exampletest.ReportLine(t, out, "lost:") != "0" || exampletest.ReportLine(t, out, "duplicates:") != "0" {
		t.Fatalf("first run: exit %d; want 0, lost 0 and no duplicates (nobody else delivered into its job)", code)
	}
	if got := exampletest.ReportLine(t, out, "delivered:"); got != "12000 records at least once, fleet-wide (12000 deliveries in all)" {
		t.Errorf("first run delivered: %s; want exactly its own 12000", got)
	}
	if _, err := os.Stat(jobDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the completed job's store is still there: %v", err)
	}
}

func TestAStoreLockIsReleasedForTheNextRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	l, err := lockStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.release(false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); err != nil {
		t.Fatalf("a kept store lost its data: %v", err)
	}
	l, err = lockStore(dir)
	if err != nil {
		t.Fatalf("the store is not free after its release: %v", err)
	}
	if err := l.release(true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a removed store is still there: %v", err)
	}
}
