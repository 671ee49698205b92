package natsstore

import (
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
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
// is refused (Fatal naming the id) within one heartbeat of its challenge
// while the live worker keeps its splits; a worker restarted at once after
// its predecessor crashed gets no answer, takes the presence key over a
// twin window (a quarter lease) after its challenge and reclaims every
// split well within half a lease of it. Times run from the challenge, seen
// on a watch of its own, so that a slow startup on a busy machine does not
// count.
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

	challenges := challengeTimes(t, storeFor(t, srv), "w1")
	c, _ = startWorker(t, storeFor(t, srv), cfg, rollbackPlanner{})
	twin := &heldSplits{c: c, held: map[coordination.SplitID]bool{}}
	waitFor(t, 2*testLease, "the twin's failure", func() bool { twin.poll(); live.poll(); return twin.err != nil || live.err != nil })
	took := time.Since(nextChallenge(t, challenges))
	t.Logf("the twin was refused %v after its challenge", took)
	if live.err != nil {
		t.Fatalf("the live worker failed: %v", live.err)
	}
	wantKind(t, twin.err, coordination.Fatal, `InstanceID "w1" is in use by another live worker`)
	if took > heartbeat {
		t.Errorf("the twin was refused %v after its challenge, want within one heartbeat (%v)", took, heartbeat)
	}
	twin.c.Abort()
	live.poll()
	if live.err != nil || len(live.held) != 2 {
		t.Fatalf("after the twin: the live worker holds %v, failure %v", live.held, live.err)
	}

	live.c.Abort() // a crash: its presence stands until it expires
	c, _ = startWorker(t, storeFor(t, srv), cfg, rollbackPlanner{})
	restart := &heldSplits{c: c, held: map[coordination.SplitID]bool{}}
	waitFor(t, 2*testLease, "the restart holds both splits", func() bool { restart.poll(); return len(restart.held) == 2 || restart.err != nil })
	took = time.Since(nextChallenge(t, challenges))
	t.Logf("the restart reclaimed both splits %v after its challenge", took)
	if restart.err != nil {
		t.Fatalf("the restart failed: %v", restart.err)
	}
	if took >= testLease/2 {
		t.Fatalf("the restart reclaimed %v after its challenge, want the twin window (a quarter lease) and the claims, under half a lease", took)
	}
}

// challengeTimes watches st for puts of instance's challenge key and sends
// the time each is seen on the channel it returns (capacity 8; a put that
// finds it full is dropped; never closed). The watch ends with the test.
func challengeTimes(t *testing.T, st store.Store, instance string) <-chan time.Time {
	t.Helper()
	w, err := st.Watch(t.Context(), store.Ephemeral, protocol.ChallengeKey(instance))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	ch := make(chan time.Time, 8)
	go func() {
		for ev := range w.Events() {
			if ev.Kind == store.Put {
				select {
				case ch <- time.Now():
				default:
				}
			}
		}
	}()
	return ch
}

// nextChallenge returns the time of the next challenge seen, failing t if
// none was: the process starting with a held InstanceID writes one before
// it waits (docs/protocol.md, "Sessions", "Restart with the same id").
func nextChallenge(t *testing.T, challenges <-chan time.Time) time.Time {
	t.Helper()
	select {
	case at := <-challenges:
		return at
	case <-time.After(5 * time.Second):
		t.Fatal("no challenge key was written")
	}
	return time.Time{}
}
