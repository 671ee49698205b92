package main

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/testkit"
)

// scriptedWorker assembles a worker around the scripted coordinator.
func scriptedWorker(t testing.TB, records int64, perSecond int64) (*worker, *testkit.CoordinatorScript, *ledger, *atomic.Int32) {
	t.Helper()
	c, script := testkit.NewScripted()
	sink := newLedger(records, 1)
	var aborted, closed atomic.Int32
	w := assemble(0, "w1", c, func() { aborted.Add(1) }, func() error { closed.Add(1); return nil },
		sink, newReadPace(perSecond), newFleet(func(string) {}), discardLogger())
	return w, script, sink, &aborted
}

func TestWorkerRunsSplitsToAllComplete(t *testing.T) {
	ds := newDataset(5, 5000)
	w, script, sink, aborted := scriptedWorker(t, ds.records, 100_000)
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
	if sink.lost() != 0 || sink.duplicates() != 0 {
		t.Fatalf("lost %d, duplicates %d; want 0, 0", sink.lost(), sink.duplicates())
	}
	if got := w.completed.Load(); got != int64(len(ds.splits)) {
		t.Fatalf("completed %d splits, want %d", got, len(ds.splits))
	}
}

func TestWorkerCrashWritesNothingMore(t *testing.T) {
	ds := newDataset(2, 200_000)
	w, script, sink, aborted := scriptedWorker(t, ds.records, 400)
	done := make(chan error, 1)
	go func() { done <- w.run(t.Context(), planner{ds: ds}) }()
	eventually(t, "Start", script.Started)
	script.Gain(ds.spec(0), 1, nil)
	eventually(t, "records delivered", func() bool { return sink.delivered() > 0 })
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
	if script.Departed() || len(script.FinalCommits()) != 0 || len(script.Released()) != 0 {
		t.Fatalf("a crashed worker departed (%v), final-committed %v or released %v",
			script.Departed(), script.FinalCommits(), script.Released())
	}
	before := sink.total()
	w.src.wait() // every reader has exited
	if sink.total() != before {
		t.Fatal("records delivered after the crash")
	}
}

func TestWorkerStopsGracefully(t *testing.T) {
	ds := newDataset(2, 200_000)
	w, script, sink, _ := scriptedWorker(t, ds.records, 400)
	ctx, cancel := contextWithCancel(t)
	done := make(chan error, 1)
	go func() { done <- w.run(ctx, planner{ds: ds}) }()
	eventually(t, "Start", script.Started)
	script.Gain(ds.spec(0), 1, nil)
	eventually(t, "records delivered", func() bool { return sink.delivered() > 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if s := w.state.Load(); s != stateStopped {
		t.Fatalf("state %s, want stopped", stateName(s))
	}
	finals := script.FinalCommits()
	if len(finals) != 1 || len(finals[0]) != 1 || finals[0][0].Progress.Watermark != sink.delivered() {
		t.Fatalf("final commits %+v, want one at the %d delivered records", finals, sink.delivered())
	}
	if got := script.DepartedWith(); !slices.Equal(got, []coordination.SplitID{ds.splits[0].ID}) {
		t.Fatalf("departed with %v, want [%s]", got, ds.splits[0].ID)
	}
}
