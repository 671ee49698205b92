package natsstore

import (
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
)

// heldSplits follows one worker's events: the splits it holds and its
// first failure.
type heldSplits struct {
	c    *actors.Coordinator
	held map[coordination.SplitID]bool
	err  error
}

// poll applies the worker's pending events.
func (h *heldSplits) poll() {
	evs, err := h.c.Poll()
	if err != nil && h.err == nil {
		h.err = err
	}
	for _, ev := range evs {
		switch ev := ev.(type) {
		case coordination.Gained:
			h.held[ev.Split.ID] = true
		case coordination.Lost:
			delete(h.held, ev.Split)
		}
	}
}

// Twins on a real NATS server, each worker on a store handle of its own
// as separate processes are (docs/protocol.md, "Sessions", "Restart with
// the same id"): a worker started with the InstanceID of a live worker
// challenges it, the live worker answers from its watch, and the newcomer
// is refused (Fatal naming the id) within one heartbeat while the live
// worker keeps its splits; a worker restarted at once after its
// predecessor crashed gets no answer, takes the presence key over a twin
// window (a quarter lease) after its first read and reclaims every split
// within about one heartbeat of its start, the store's latency of startup
// and claims added; the bound is half a lease, which the restart always
// exceeded before the challenge.
func TestATwinIsRefusedAndARestartReclaimsWithinAHeartbeat(t *testing.T) {
	t.Parallel() // waits in real time
	srv := runServer(t, serverOptions(t.TempDir()))
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "w1"
	cfg.LeaseDuration = testLease
	cfg.OpTimeout = 250 * time.Millisecond
	cfg.ReconcileInterval = 500 * time.Millisecond
	cfg.ReplanInterval = testLease
	cfg.StartupGrace = 0
	heartbeat := testLease / 3

	c, _ := startWorker(t, storeFor(t, srv), cfg, rollbackPlanner{})
	live := &heldSplits{c: c, held: map[coordination.SplitID]bool{}}
	waitFor(t, 20*time.Second, "w1 holds both splits", func() bool { live.poll(); return len(live.held) == 2 })

	c, _ = startWorker(t, storeFor(t, srv), cfg, rollbackPlanner{})
	twin := &heldSplits{c: c, held: map[coordination.SplitID]bool{}}
	start := time.Now()
	waitFor(t, 2*testLease, "the twin's failure", func() bool { twin.poll(); live.poll(); return twin.err != nil || live.err != nil })
	took := time.Since(start)
	t.Logf("the twin was refused after %v", took)
	if live.err != nil {
		t.Fatalf("the live worker failed: %v", live.err)
	}
	wantKind(t, twin.err, coordination.Fatal, `InstanceID "w1" is in use by another live worker`)
	if took > heartbeat {
		t.Errorf("the twin was refused after %v, want within one heartbeat (%v)", took, heartbeat)
	}
	twin.c.Abort()
	live.poll()
	if live.err != nil || len(live.held) != 2 {
		t.Fatalf("after the twin: the live worker holds %v, failure %v", live.held, live.err)
	}

	live.c.Abort() // a crash: its presence stands until it expires
	c, _ = startWorker(t, storeFor(t, srv), cfg, rollbackPlanner{})
	restart := &heldSplits{c: c, held: map[coordination.SplitID]bool{}}
	start = time.Now()
	waitFor(t, 2*testLease, "the restart holds both splits", func() bool { restart.poll(); return len(restart.held) == 2 || restart.err != nil })
	took = time.Since(start)
	t.Logf("the restart reclaimed both splits after %v", took)
	if restart.err != nil {
		t.Fatalf("the restart failed: %v", restart.err)
	}
	if took >= testLease/2 {
		t.Fatalf("the restart reclaimed after %v, want within one heartbeat (%v) and the claim, under half a lease", took, heartbeat)
	}
}
