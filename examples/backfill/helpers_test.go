package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/testkit"
)

// waitFor is how long a test waits for something that should happen within
// milliseconds; it only bounds a failing test.
const waitFor = 15 * time.Second

// eventually polls cond until it holds or waitFor passes, then fails with what.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// harness drives one source through a real driver over the scripted
// coordinator.
type harness struct {
	t      testing.TB
	script *testkit.CoordinatorScript
	drv    *driver.Driver
	src    *source
	sink   *ledger
}

// newHarness returns a started driver over a fresh source reading records
// 0..records-1 at perSecond records per lane.
func newHarness(t testing.TB, records, perSecond int64) *harness {
	t.Helper()
	c, script := testkit.NewScripted()
	sink := newLedger(records, 1)
	dead := make(chan struct{})
	src := newSource(0, sink, newReadPace(perSecond), dead)
	drv := driver.New(c, src)
	if err := drv.Start(planner{ds: newDataset(1, records)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(dead)
		src.wait()
	})
	return &harness{t: t, script: script, drv: drv, src: src, sink: sink}
}

// spec returns a spec for records r under id.
func spec(id string, r recordRange) coordination.SplitSpec {
	return coordination.SplitSpec{ID: coordination.SplitID(id), Descriptor: encodeDescriptor(r), Weight: uint64(max(1, r.Len()))}
}

// next polls the driver until an event satisfies want and returns it. Poll
// errors fail the test.
func (h *harness) next(what string, want func(driver.Event) bool) driver.Event {
	h.t.Helper()
	deadline := time.Now().Add(waitFor)
	for time.Now().Before(deadline) {
		ev, err := h.drv.PollEvents(20 * time.Millisecond)
		if err != nil {
			h.t.Fatalf("waiting for %s: PollEvents: %v", what, err)
		}
		if want(ev) {
			return ev
		}
	}
	h.t.Fatalf("timed out waiting for %s", what)
	return nil
}

// is returns a predicate matching events of type E.
func is[E driver.Event](ev driver.Event) bool {
	_, ok := ev.(E)
	return ok
}

// lastCommit returns the last successful commit of split, failing if none.
func (h *harness) lastCommit(split coordination.SplitID) coordination.SplitProgress {
	h.t.Helper()
	cs := h.script.Commits()
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].Split == split {
			return cs[i].Progress
		}
	}
	h.t.Fatalf("no commit of %s", split)
	return coordination.SplitProgress{}
}

// discardLogger returns a logger that drops everything.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// contextWithCancel returns a context ended by cancel or by the test's end.
func contextWithCancel(t testing.TB) (context.Context, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	return ctx, cancel
}
