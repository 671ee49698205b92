package coordctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// TestOperatingAJobEndToEnd runs real workers on an embedded NATS server
// and drives coordctl through a job's life: status while running (one
// split quarantined), delete-job refused while workers are live, status of
// the stalled job, requeue, a second run that completes it, audit clean,
// audit -follow and audit catching a planted stale write, and delete-job
// with -yes and -force.
func TestOperatingAJobEndToEnd(t *testing.T) {
	for name, setup := range backends() {
		// Not parallel: the watch checks set environment variables.
		t.Run(name, func(t *testing.T) { operateJob(t, setup(t)) })
	}
}

// operateJob is TestOperatingAJobEndToEnd on one backend.
func operateJob(t *testing.T, be backend) {
	const job = "e2e"
	ctx := t.Context()
	plan := rangePlanner{splits: 4, poison: map[coordination.SplitID]bool{"s-1": true}}

	// Run 1: s-1 is poison (quarantined at its first attempt); the other
	// lanes wait for the gate, so the job is observed running.
	gate := make(chan struct{})
	f := newFleet(t, be, job)
	for _, w := range []string{"w1", "w2"} {
		f.start(ctx, w, plan, newGateSource(gate, plan.poison), 1)
	}
	var s status
	last := ""
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last status:\n%s", last)
		}
	})
	eventually(t, 20*time.Second, "a running job with 3 held splits and 1 quarantined", func() bool {
		code, out, errOut := ctl(t, ctx, be, job, "status", "-json")
		last = out + errOut
		s = status{}
		return code == ExitOK && json.Unmarshal([]byte(out), &s) == nil && s.Splits.Held == 3 && s.Splits.Quarantined == 1 && len(s.Workers) == 2
	})
	if s.State != stateRunning || s.Leader == nil || s.Finality != "final" || s.Fingerprint != plan.Fingerprint() {
		t.Fatalf("running status = %+v, want running, final plan, a leader, fingerprint %q", s, plan.Fingerprint())
	}
	if s.Splits.TotalWeight != 100 || s.Splits.RemainingWeight != 100 || s.Splits.Remaining != 4 {
		t.Fatalf("running totals = %+v, want weight 100 of which 100 remain over 4 splits", s.Splits)
	}
	if len(s.Quarantined) != 1 || s.Quarantined[0].Split != "s-1" || s.Quarantined[0].Attempts != 1 {
		t.Fatalf("quarantined = %+v, want s-1 after 1 attempt", s.Quarantined)
	}
	if held := s.Workers[0].Held + s.Workers[1].Held; held != 3 {
		t.Fatalf("workers hold %d splits, want 3: %+v", held, s.Workers)
	}
	// The connection flags before the command, as operators type them.
	var tableOut, tableErr bytes.Buffer
	code := Run(ctx, append(append([]string{"-job", job}, be.conn...), "status"), &tableOut, &tableErr)
	table := tableOut.String() + tableErr.String()
	for _, want := range []string{"state        running", "quarantined  1", "s-1          1         20", "WORKER"} {
		if code != ExitOK || !strings.Contains(table, want) {
			t.Fatalf("status table (exit %d) lacks %q:\n%s", code, want, table)
		}
	}
	code, _, stderr := ctl(t, ctx, be, job, "delete-job", "-yes")
	if code != ExitError || !strings.Contains(stderr, "live workers: w1, w2") || !strings.Contains(stderr, "-force") {
		t.Fatalf("delete-job while live: exit %d, stderr %q; want a refusal naming w1, w2 and -force", code, stderr)
	}

	close(gate)
	for w, err := range f.wait() {
		if _, ok := errors.AsType[*driver.StalledError](err); !ok {
			t.Fatalf("run 1: %s ended with %v, want a StalledError", w, err)
		}
	}
	code, out, _ := ctl(t, ctx, be, job, "status", "-json")
	s = status{}
	if code != ExitOK || json.Unmarshal([]byte(out), &s) != nil {
		t.Fatalf("status after run 1: exit %d, %s", code, out)
	}
	if s.State != stateStalled || len(s.Workers) != 0 || s.Splits.Completed != 3 || s.Splits.Remaining != 1 || s.Splits.RemainingWeight != 20 {
		t.Fatalf("status after run 1 = %+v, want stalled, no workers, 3 completed, s-1 (weight 20) remaining", s)
	}
	checkWatchOutputs(t, ctx, be, job)

	// Requeue: a completed split is refused; the quarantined one turns
	// runnable with fresh attempts.
	// Flags after the split ids.
	var reqOut, reqErr bytes.Buffer
	code = Run(ctx, append([]string{"requeue", "s-0", "-job", job}, be.conn...), &reqOut, &reqErr)
	if stderr := reqErr.String(); code != ExitError || !strings.Contains(stderr, "split s-0 is completed, not quarantined") {
		t.Fatalf("requeue of a completed split: exit %d, %q", code, stderr)
	}
	if code, out, stderr := ctl(t, ctx, be, job, "requeue", "-all-quarantined"); code != ExitOK || !strings.Contains(out, "requeued s-1") {
		t.Fatalf("requeue -all-quarantined: exit %d, %q %q", code, out, stderr)
	}
	code, out, _ = ctl(t, ctx, be, job, "status", "-json", "-splits")
	s = status{}
	if code != ExitOK || json.Unmarshal([]byte(out), &s) != nil || s.State != stateRunning || s.Splits.Runnable != 1 || s.Splits.Quarantined != 0 {
		t.Fatalf("status after the requeue (exit %d) = %+v, want running with s-1 runnable", code, s)
	}

	// Run 2: a new worker, for which s-1 is not poison, completes the job.
	f2 := newFleet(t, be, job)
	f2.start(ctx, "w3", plan, newGateSource(nil, nil), 1)
	if errs := f2.wait(); errs["w3"] != nil {
		t.Fatalf("run 2 after the requeue: %v, want AllComplete (nil)", errs["w3"])
	}
	code, out, _ = ctl(t, ctx, be, job, "status", "-json", "-splits")
	s = status{}
	if code != ExitOK || json.Unmarshal([]byte(out), &s) != nil || s.State != stateComplete || s.Splits.Remaining != 0 || s.Splits.RemainingWeight != 0 {
		t.Fatalf("status after run 2 (exit %d) = %+v, want complete with nothing remaining", code, s)
	}
	for _, r := range s.Rows {
		if r.Split == "s-1" && (r.Status != splitCompleted || r.Owner != "w3" || r.Watermark == nil || *r.Watermark != 20 || r.Attempts != 0) {
			t.Fatalf("s-1 row = %+v, want completed by w3 at watermark 20, no attempt charged (a handed-back claim)", r)
		}
	}

	code, out, _ = ctl(t, ctx, be, job, "audit")
	if code != ExitOK || !strings.Contains(out, "violations: 0") || !strings.Contains(out, "4 splits, 1 requeues") {
		t.Fatalf("audit of the clean job: exit %d\n%s", code, out)
	}

	// Plant a stale write while audit -follow runs: progress.s-2 rewritten
	// under an older epoch with a lower watermark.
	fctx, stopFollow := context.WithCancel(ctx)
	var fout, ferr syncBuffer
	followed := make(chan int, 1)
	go func() {
		followed <- Run(fctx, append([]string{"audit", "-follow", "-job", job}, be.conn...), &fout, &ferr)
	}()
	eventually(t, 10*time.Second, "audit -follow to check the history and follow live writes", func() bool {
		return strings.Contains(ferr.String(), "following every write live")
	})
	if fout.Len() != 0 {
		t.Fatalf("audit -follow reported on the clean history: %s", fout.String())
	}
	raw := be.open(t, job)
	prev, stale := plantStaleWrite(t, raw, "s-2")
	eventually(t, 10*time.Second, "audit -follow to report the stale write", func() bool {
		return strings.Contains(fout.String(), "VIOLATION stale-write progress.s-2")
	})
	stopFollow()
	if code := <-followed; code != ExitViolations {
		t.Fatalf("audit -follow exit = %d, want %d\n%s", code, ExitViolations, fout.String())
	}
	code, out, _ = ctl(t, ctx, be, job, "audit")
	revs := fmt.Sprintf("(revs %d -> %d)", prev, stale)
	for _, want := range []string{
		"VIOLATION stale-write progress.s-2 " + revs + ": a write under epoch ",
		"VIOLATION watermark-decreased progress.s-2 " + revs + ": watermark went from 30 to 5",
		"VIOLATION terminal-reverted progress.s-2 " + revs,
	} {
		if code != ExitViolations || !strings.Contains(out, want) {
			t.Fatalf("audit with a planted stale write (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
	// When s-2 moved once, its epoch-1 claimant was another worker, and the
	// planted write (owner kept) is also a fence-owner mismatch: 3 or 4
	// violations, all of progress.s-2.
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "VIOLATION ") && !strings.Contains(line, " progress.s-2 ") {
			t.Fatalf("audit blames another record than the planted one: %s", line)
		}
	}

	// delete-job: -yes is required; a live presence key blocks it until
	// -force; then the job is gone.
	if code, _, stderr := ctl(t, ctx, be, job, "delete-job"); code != ExitError || !strings.Contains(stderr, "pass -yes") {
		t.Fatalf("delete-job without -yes: exit %d, %q", code, stderr)
	}
	if _, ok, err := raw.Create(ctx, store.Ephemeral, protocol.WorkerKey("ghost"), protocol.EncodePresence(protocol.PresenceRecord{Nonce: "n"})); err != nil || !ok {
		t.Fatalf("planting a presence key: %v %v", ok, err)
	}
	if code, _, stderr := ctl(t, ctx, be, job, "delete-job", "-yes"); code != ExitError || !strings.Contains(stderr, "live workers: ghost") {
		t.Fatalf("delete-job with a live worker: exit %d, %q", code, stderr)
	}
	if code, out, stderr := ctl(t, ctx, be, job, "delete-job", "-yes", "-force"); code != ExitOK || !strings.Contains(out, "deleted job") {
		t.Fatalf("delete-job -yes -force: exit %d, %q %q", code, out, stderr)
	}
	if code, _, stderr := ctl(t, ctx, be, job, "status"); code != ExitError || !strings.Contains(stderr, "does not exist") {
		t.Fatalf("status of the deleted job: exit %d, %q", code, stderr)
	}
}

// plantStaleWrite rewrites split id's completed progress record as a
// superseded tenancy would: one epoch lower, watermark 5, not completed. It
// returns the revisions before and after.
func plantStaleWrite(t testing.TB, st store.Store, id coordination.SplitID) (prev, stale store.Revision) {
	t.Helper()
	ctx := t.Context()
	key := protocol.ProgressKey(id)
	e, ok, err := st.Get(ctx, store.Durable, key)
	if err != nil || !ok {
		t.Fatalf("reading %s: %v %v", key, ok, err)
	}
	fp := protocol.Fingerprint(rangePlanner{splits: 4}.Fingerprint())
	r, err := protocol.DecodeProgress(key, e.Value, fp)
	if err != nil || r.Epoch == 0 || !r.Completed {
		t.Fatalf("%s = %+v, %v; want a completed record of a tenancy", key, r, err)
	}
	r.Epoch--
	w := int64(5)
	r.Watermark, r.Completed = &w, false
	rev, ok, err := st.Update(ctx, store.Durable, key, protocol.EncodeProgress(r), e.Revision)
	if err != nil || !ok {
		t.Fatalf("planting the stale write: %v %v", ok, err)
	}
	return e.Revision, rev
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}
