package actors

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
)

// TestAnIdleLaneMakesTheLeaderAskTheOwnerToCut runs the decision path of
// docs/protocol.md "Runtime split" through a whole worker: an estimate
// reported with ReportRemaining rides on the presence, the leader (the same
// worker) sees a lane idle and writes a request into the owner's
// assignment record, the split writer hands it to the commit writer, and
// the driver polls CutRequested with the keep of protocol.CutOf. Once the
// cut is committed its residual takes the idle lane and nothing more is
// asked.
func TestAnIdleLaneMakesTheLeaderAskTheOwnerToCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", workertest.FinalPlan("a"), func(c *coordination.Config) { c.MaxInFlight = 2 })
		r.until("w1 holds a", 10*time.Second, []*member{w}, func() bool { _, ok := w.held["a"]; return ok })
		g := w.held["a"]
		w.c.ReportRemaining("a", g.Epoch, 1000)
		var asked coordination.CutRequested
		r.until("a cut request", 10*time.Second, []*member{w}, func() bool {
			var ok bool
			asked, ok = hasEvent[coordination.CutRequested](w)
			return ok
		})
		keep, _, _ := protocol.CutOf(1000, 1000/2.0, 1)
		if asked.Split != "a" || asked.Epoch != g.Epoch || asked.Keep != float64(keep)/1e6 {
			t.Fatalf("CutRequested %+v, want a at epoch %d keeping %d ppm", asked, g.Epoch, keep)
		}
		rid, err := w.c.CommitCut("a", coordination.SplitProgress{Watermark: 5}, coordination.Cut{Primary: []byte("head"), Residual: []byte("tail"), ResidualWeight: 500})
		if err != nil {
			t.Fatal(err)
		}
		w.c.ReportRemaining("a", g.Epoch, 500)
		r.until("w1 holds the residual", 10*time.Second, []*member{w}, func() bool { _, ok := w.held[rid]; return ok })
		r.advance(3 * time.Second) // several heartbeats and CutIntervals: no lane idles
		w.pump(t)
		n := 0
		for _, ev := range w.evs {
			if _, ok := ev.(coordination.CutRequested); ok {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d CutRequested events, want 1: %v", n, w.evs)
		}
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestACutRequestReachesTheDriverOnlyForAPolledTenancy: the root, the
// outbox's owner, hands the commit writer's CutRequested to the driver only
// for the tenancy whose Gained Poll handed out last: not before that Gained
// is polled, not for an earlier tenancy of the split (docs/protocol.md,
// "Runtime split", "Who decides").
func TestACutRequestReachesTheDriverOnlyForAPolledTenancy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rig := newRootRig(t)
		rig.start(t)
		e, v, out := rig.e, rig.v, rig.out
		cut := func(epoch coordination.LeaseEpoch) coordination.CutRequested {
			return coordination.CutRequested{Split: "a", Epoch: epoch, Keep: 0.5, Parts: 1}
		}
		// polled sends msgs to the root and returns what Poll hands out.
		polled := func(msgs ...any) []coordination.Event {
			for _, m := range msgs {
				e.Send(v.PIDs.Root, m)
			}
			synctest.Wait()
			evs, err := out.Take()
			if err != nil {
				t.Fatal(err)
			}
			return evs
		}
		gained := wire.EventsRaised{Events: []coordination.Event{coordination.Gained{Split: coordination.SplitSpec{ID: "a"}, Epoch: 2}}}
		if evs := polled(wire.CutRequested{Event: cut(2)}); len(evs) != 0 {
			t.Fatalf("before any Gained: %v, want nothing", evs)
		}
		evs := polled(gained, wire.CutRequested{Event: cut(2)})
		if len(evs) != 1 {
			t.Fatalf("Gained unpolled: %v, want the Gained alone", evs)
		}
		if evs := polled(wire.CutRequested{Event: cut(1)}); len(evs) != 0 {
			t.Fatalf("an earlier tenancy's request: %v, want nothing", evs)
		}
		if evs := polled(wire.CutRequested{Event: cut(2)}); !slices.Equal(evs, []coordination.Event{cut(2)}) {
			t.Fatalf("Gained polled: %v, want the request", evs)
		}
	})
}
