// Package twintest runs the twins check on a real store, each worker on a
// store handle of its own as separate processes are (docs/protocol.md,
// "Sessions", "Restart with the same id"): the natsstore and pgstore tests
// share it.
package twintest

import (
	"strings"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/testkit"
)

// Run checks, with cfg (InstanceID "w1" is set here) on handles from
// newStore (each call a new handle on one job): a worker started with the
// InstanceID of a live worker challenges it, the live worker answers from
// its watch, and the newcomer is refused (Fatal naming the id) within one
// heartbeat of its challenge while the live worker keeps its splits; a
// worker restarted at once after its predecessor crashed gets no answer,
// takes the presence key over a twin window (a quarter lease) after its
// challenge and reclaims every split well within half a lease of it. Times
// run from the challenge, seen on a watch of its own, so that a slow
// startup on a busy machine does not count.
func Run(t *testing.T, cfg coordination.Config, newStore func() store.Store) {
	t.Helper()
	cfg.InstanceID = "w1"
	lease, heartbeat := cfg.LeaseDuration, cfg.LeaseDuration/3
	p := testkit.NewTestPlanner("twins", testkit.Splits(2)...)

	live := start(t, newStore(), cfg, p)
	waitFor(t, 20*time.Second, "w1 holds both splits", func() bool { live.poll(); return len(live.held) == 2 })

	challenges := challengeTimes(t, newStore(), "w1")
	twin := start(t, newStore(), cfg, p)
	waitFor(t, 2*lease, "the twin's failure", func() bool { twin.poll(); live.poll(); return twin.err != nil || live.err != nil })
	took := time.Since(nextChallenge(t, challenges))
	t.Logf("the twin was refused %v after its challenge", took)
	if live.err != nil {
		t.Fatalf("the live worker failed: %v", live.err)
	}
	if coordination.KindOf(twin.err) != coordination.Fatal || !strings.Contains(twin.err.Error(), `InstanceID "w1" is in use by another live worker`) {
		t.Fatalf("the twin failed with %v, want Fatal naming the InstanceID in use", twin.err)
	}
	if took > heartbeat {
		t.Errorf("the twin was refused %v after its challenge, want within one heartbeat (%v)", took, heartbeat)
	}
	twin.c.Abort()
	live.poll()
	if live.err != nil || len(live.held) != 2 {
		t.Fatalf("after the twin: the live worker holds %v, failure %v", live.held, live.err)
	}

	live.c.Abort() // a crash: its presence stands until it expires
	restart := start(t, newStore(), cfg, p)
	waitFor(t, 2*lease, "the restart holds both splits", func() bool { restart.poll(); return len(restart.held) == 2 || restart.err != nil })
	took = time.Since(nextChallenge(t, challenges))
	t.Logf("the restart reclaimed both splits %v after its challenge", took)
	if restart.err != nil {
		t.Fatalf("the restart failed: %v", restart.err)
	}
	if took >= lease/2 {
		t.Fatalf("the restart reclaimed %v after its challenge, want the twin window (a quarter lease) and the claims, under half a lease", took)
	}
}

// worker follows one worker's events: the splits it holds and its first
// failure.
type worker struct {
	c    *actors.Coordinator
	held map[coordination.SplitID]bool
	err  error
}

// start starts a worker with cfg on st and planner p; it is aborted when t
// ends.
func start(t *testing.T, st store.Store, cfg coordination.Config, p coordination.Planner) *worker {
	t.Helper()
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
	return &worker{c: c, held: map[coordination.SplitID]bool{}}
}

// poll applies the worker's pending events.
func (w *worker) poll() {
	evs, err := w.c.Poll()
	if err != nil && w.err == nil {
		w.err = err
	}
	for _, ev := range evs {
		switch ev := ev.(type) {
		case coordination.Gained:
			w.held[ev.Split.ID] = true
		case coordination.Lost:
			delete(w.held, ev.Split)
		}
	}
}

// waitFor polls cond every 10 ms until it holds, failing t after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(timeout); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
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
