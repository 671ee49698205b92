package natsstore

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spate-go/coordination"
)

// rollbackPlanner plans two splits.
type rollbackPlanner struct{}

func (rollbackPlanner) Fingerprint() string { return "rollback-v1" }

func (rollbackPlanner) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	return coordination.SplitPlan{Finality: coordination.PlanFinal, Splits: []coordination.PlannedSplit{
		{Spec: coordination.SplitSpec{ID: "a", Weight: 1}},
		{Spec: coordination.SplitSpec{ID: "b", Weight: 1}},
	}}, nil
}

// A NATS server restarted from an older copy of its store directory (as
// after a power loss without sync_interval: always) has lost writes it
// acknowledged: a worker that saw them fails with the store rollback Fatal
// naming a key and both revisions (docs/protocol.md, "Store rollback"),
// never blaming its source. A real worker on a real server: the old copy
// is taken with the server stopped, the worker commits on for a few
// seconds, then the server restarts on the copy at the same address.
func TestRestartFromAnOlderStoreDirIsAStoreRollback(t *testing.T) {
	t.Parallel() // waits in real time
	dir := t.TempDir()
	opts := serverOptions(dir)
	opts.SyncAlways = true
	srv := runServer(t, opts)
	opts.Port = srv.Addr().(*net.TCPAddr).Port
	st := storeFor(t, srv)

	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "w1"
	cfg.LeaseDuration = testLease
	cfg.OpTimeout = 250 * time.Millisecond
	cfg.ReconcileInterval = 500 * time.Millisecond
	cfg.ReplanInterval = testLease
	cfg.StartupGrace = 0
	c, _ := startWorker(t, st, cfg, rollbackPlanner{})
	held := map[coordination.SplitID]int64{}
	var failure error
	poll := func() {
		evs, err := c.Poll()
		if err != nil && failure == nil {
			failure = err
		}
		for _, ev := range evs {
			switch ev := ev.(type) {
			case coordination.Gained:
				held[ev.Split.ID] = 0
				if ev.Progress != nil {
					held[ev.Split.ID] = ev.Progress.Watermark // resume where the fence says
				}
			case coordination.Lost:
				delete(held, ev.Split)
			}
		}
	}
	commit := func() {
		for id, w := range held {
			if err := c.Commit(id, coordination.SplitProgress{Watermark: w + 1}); err == nil {
				held[id] = w + 1
			}
		}
	}
	waitFor(t, 20*time.Second, "w1 holds both splits", func() bool { poll(); return len(held) == 2 })
	commit()

	// The older copy, taken with the server stopped.
	srv.Shutdown()
	srv.WaitForShutdown()
	old := t.TempDir()
	if err := os.CopyFS(old, os.DirFS(dir)); err != nil {
		t.Fatalf("copy the store directory: %v", err)
	}
	srv = runServer(t, opts)
	until := time.Now().Add(3 * time.Second)
	for time.Now().Before(until) {
		poll()
		commit()
		time.Sleep(50 * time.Millisecond) // a source's pace; the test waits on the failure below
	}
	if failure != nil {
		t.Fatalf("failed before the rollback: %v", failure)
	}

	srv.Shutdown()
	srv.WaitForShutdown()
	opts.StoreDir = old
	runServer(t, opts)
	waitFor(t, 30*time.Second, "the worker's failure", func() bool { poll(); commit(); return failure != nil })
	if coordination.KindOf(failure) != coordination.Fatal ||
		!strings.Contains(failure.Error(), "store rollback: ") ||
		!strings.Contains(failure.Error(), "set sync_interval: always on every NATS server") ||
		!strings.Contains(failure.Error(), "or restore the job from scratch") {
		t.Fatalf("failure = %v, want the store rollback Fatal", failure)
	}
	if strings.Contains(failure.Error(), "watermark") {
		t.Fatalf("failure = %v blames the source", failure)
	}
	t.Logf("failure: %v", failure)
}
