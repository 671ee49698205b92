package main

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/testkit"
)

// scriptedWorker assembles a worker around the scripted coordinator,
// delivering to a ledger on an embedded NATS server.
func scriptedWorker(t testing.TB, perSecond int64) (*worker, *testkit.CoordinatorScript, *ledger, *atomic.Int32) {
	t.Helper()
	c, script := testkit.NewScripted()
	sink := testLedger(t, embedded(t), "test")
	var aborted, closed atomic.Int32
	w := assemble("w1", "run1", c, func() { aborted.Add(1) }, func() error { closed.Add(1); return nil },
		sink, newReadPace(perSecond), newFleet(func(string) {}), discardLogger())
	return w, script, sink, &aborted
}

func TestWorkerRunsSplitsToAllComplete(t *testing.T) {
	ds := newDataset(5, 5000)
	w, script, sink, aborted := scriptedWorker(t, 100_000)
	done := make(chan error, 1)
	go func() { done <- w.run(t.Context(), planner{ds: ds}) }()
	eventually(t, "Start", script.Started)
	for i := range ds.splits {
		script.Gain(ds.spec(i), 1, nil)
	}
	eventually(t, "every split committed complete", func() bool {
		completed := map[coordination.SplitID]bool{}
		for _, c := range script.Commits() {
			if c.Progress.Completed {
				completed[c.Split] = true
			}
		}
		return len(completed) == len(ds.splits)
	})
	script.AllComplete()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if s := w.state.Load(); s != stateCompleted {
		t.Fatalf("state %s, want completed", stateName(s))
	}
	if !script.Departed() || aborted.Load() != 0 {
		t.Fatalf("departed %v, aborted %d; want a departure and no abort", script.Departed(), aborted.Load())
	}
	if got := tallyOf(ds, sink.snapshot()); got.lost() != 0 || got.duplicates() != 0 {
		t.Fatalf("ledger: lost %d, duplicates %d; want 0, 0", got.lost(), got.duplicates())
	}
	if got, want := w.src.completed.Load(), int64(len(ds.splits)-1); got < want { // the empty split may complete by Sweep alone
		t.Fatalf("read %d splits to their end, want at least %d", got, want)
	}
	if w.src.share.Load() != w.src.delivered.Load() {
		t.Fatalf("share %d, delivered %d: a completed worker's bar would not be full", w.src.share.Load(), w.src.delivered.Load())
	}
}

func TestWorkerCrashDeliversNothingMore(t *testing.T) {
	ds := newDataset(2, 200_000)
	w, script, sink, aborted := scriptedWorker(t, 400)
	done := make(chan error, 1)
	go func() { done <- w.run(t.Context(), planner{ds: ds}) }()
	eventually(t, "Start", script.Started)
	script.Gain(ds.spec(0), 1, nil)
	eventually(t, "records delivered", func() bool { return tallyOf(ds, sink.snapshot()).delivered > 0 })
	w.crashNow()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if s := w.state.Load(); s != stateCrashed {
		t.Fatalf("state %s, want crashed", stateName(s))
	}
	if aborted.Load() != 1 {
		t.Fatalf("aborted %d times, want once", aborted.Load())
	}
	before := tallyOf(ds, sink.snapshot()).deliveries
	w.src.wait() // every reader has exited
	if after := tallyOf(ds, sink.snapshot()).deliveries; after != before {
		t.Fatalf("%d records delivered after the crash", after-before)
	}
}

func TestWorkerStopsGracefully(t *testing.T) {
	ds := newDataset(2, 200_000)
	w, script, sink, _ := scriptedWorker(t, 400)
	ctx, cancel := contextWithCancel(t)
	done := make(chan error, 1)
	go func() { done <- w.run(ctx, planner{ds: ds}) }()
	eventually(t, "Start", script.Started)
	script.Gain(ds.spec(0), 1, nil)
	eventually(t, "records delivered", func() bool { return tallyOf(ds, sink.snapshot()).delivered > 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if s := w.state.Load(); s != stateInterrupted {
		t.Fatalf("state %s, want interrupted", stateName(s))
	}
	delivered := tallyOf(ds, sink.snapshot()).delivered
	finals := script.FinalCommits()
	if len(finals) != 1 || len(finals[0]) != 1 || finals[0][0].Progress.Watermark != ds.splits[0].Range.Start+delivered {
		t.Fatalf("final commits %+v, want one at the %d recorded records", finals, delivered)
	}
	if got := script.DepartedWith(); !slices.Equal(got, []coordination.SplitID{ds.splits[0].ID}) {
		t.Fatalf("departed with %v, want [%s]", got, ds.splits[0].ID)
	}
}
