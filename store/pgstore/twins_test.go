package pgstore

import (
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/testkit"
)

// twinsLease is the LeaseDuration of the twins test: long enough that the
// store's own latency under -race on a busy machine (150 to 300 ms from the
// takeover to the claims) stays small beside the heartbeat.
const twinsLease = 3 * time.Second

// heldSplits follows one worker's events: the splits it holds and its
// first failure.
type heldSplits struct {
	c    *actors.Coordinator
	held map[coordination.SplitID]bool
	err  error
}

// startHeld starts worker cfg on a store handle of its own for job (as a
// separate process) with planner p; it is aborted when t ends.
func startHeld(t *testing.T, s *pgtest.Server, job string, cfg coordination.Config, p coordination.Planner) *heldSplits {
	t.Helper()
	st := newStore(t, s, Config{Job: job}, cfg.LeaseDuration)
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	c, err := actors.Spawn(e, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Abort)
	if err := c.Start(p); err != nil {
		t.Fatal(err)
	}
	return &heldSplits{c: c, held: map[coordination.SplitID]bool{}}
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

// Twins on a real PostgreSQL server, each worker on a store handle of its
// own as separate processes are (docs/protocol.md, "Sessions", "Restart
// with the same id"): a worker started with the InstanceID of a live
// worker challenges it, the live worker answers from its watch (LISTEN),
// and the newcomer is refused (Fatal naming the id) within one heartbeat
// of its challenge while the live worker keeps its splits; a worker
// restarted at once after its predecessor crashed gets no answer, takes
// the presence key over a twin window (a quarter lease) after its
// challenge and reclaims every split well within half a lease of it. Times
// run from the challenge, seen on a watch of its own, so that a slow
// startup on a busy machine does not count.
func TestATwinIsRefusedAndARestartReclaimsWithinAHeartbeat(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel() // waits in real time
	job := pgtest.UniqueName("twins")
	p := testkit.NewTestPlanner("pg-twins:"+job, testkit.Splits(2)...)
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "w1"
	cfg.LeaseDuration = twinsLease
	cfg.OpTimeout = time.Second // a new connection's first catalog checks took over 250 ms under load
	cfg.ReconcileInterval = 2 * cfg.OpTimeout
	cfg.ReplanInterval = twinsLease
	cfg.StartupGrace = 0
	heartbeat := twinsLease / 3

	live := startHeld(t, s, job, cfg, p)
	waitFor(t, 20*time.Second, "w1 holds both splits", func() bool { live.poll(); return len(live.held) == 2 })

	challenges := challengeTimes(t, newStore(t, s, Config{Job: job}, twinsLease), "w1")
	twin := startHeld(t, s, job, cfg, p)
	waitFor(t, 2*twinsLease, "the twin's failure", func() bool { twin.poll(); live.poll(); return twin.err != nil || live.err != nil })
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
	restart := startHeld(t, s, job, cfg, p)
	waitFor(t, 2*twinsLease, "the restart holds both splits", func() bool { restart.poll(); return len(restart.held) == 2 || restart.err != nil })
	took = time.Since(nextChallenge(t, challenges))
	t.Logf("the restart reclaimed both splits %v after its challenge", took)
	if restart.err != nil {
		t.Fatalf("the restart failed: %v", restart.err)
	}
	if took >= twinsLease/2 {
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
