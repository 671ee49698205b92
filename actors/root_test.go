package actors

import (
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/messages"
)

func TestReleaseLetsAPeerClaimWithinALease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		p := workertest.FinalPlan("a", "b")
		w1 := r.start("w1", p, func(c *coordination.Config) { c.MaxInFlight = 2 })
		ms := []*member{w1}
		r.until("w1 holds both", 10*time.Second, ms, func() bool { return len(w1.held) == 2 })
		w2 := r.start("w2", p)
		ms = append(ms, w2)
		r.until("revocation", 10*time.Second, ms, func() bool {
			for _, ev := range w1.evs {
				if _, ok := ev.(coordination.RevokeRequested); ok {
					return true
				}
			}
			return false
		})
		var rv coordination.SplitID
		for _, ev := range w1.evs {
			if e, ok := ev.(coordination.RevokeRequested); ok {
				rv = e.Split
			}
		}
		if err := w1.c.Commit(rv, coordination.SplitProgress{Watermark: 3}); err != nil {
			t.Fatal(err)
		}
		if err := w1.c.ReleaseDrained(rv); err != nil {
			t.Fatal(err)
		}
		delete(w1.held, rv)
		start := r.clk.Now()
		r.until("w2 gains the drained split", 10*time.Second, ms, func() bool { _, ok := w2.held[rv]; return ok })
		if took := r.clk.Since(start); took >= 1500*time.Millisecond {
			t.Fatalf("hand-over took %s", took)
		}
		if g := w2.held[rv]; g.Progress == nil || g.Progress.Watermark != 3 {
			t.Fatalf("gained %+v, want the drained cut 3", g)
		}
		for _, ev := range w1.evs {
			if _, ok := ev.(coordination.Lost); ok {
				t.Fatalf("w1 lost a split: %v", w1.evs)
			}
		}
		for _, m := range ms {
			if err := m.c.Depart(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestFailWithAStaleEpochIsFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", workertest.FinalPlan("a"))
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		g := w.held["a"]
		err := w.c.Fail("a", g.Epoch+1, "x")
		want := "split a: epoch 2 is not the held tenancy (held: 1); nothing was written"
		if coordination.KindOf(err) != coordination.Fenced || err.(*coordination.Error).Reason != want {
			t.Fatalf("Fail: %v", err)
		}
		if err := w.c.Commit("zz", coordination.SplitProgress{}); coordination.KindOf(err) != coordination.Fenced || err.(*coordination.Error).Reason != "split zz: not held here; nothing was written" {
			t.Fatalf("Commit of a split not held: %v", err)
		}
		if err := w.c.Commit("a", coordination.SplitProgress{Watermark: 10}); err != nil {
			t.Fatal(err)
		}
		err = w.c.Commit("a", coordination.SplitProgress{Watermark: 9})
		if coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), "commit watermark 9 is below the committed watermark 10") {
			t.Fatalf("regressing commit: %v", err)
		}
		if _, err := w.c.Poll(); coordination.KindOf(err) != coordination.Fatal {
			t.Fatalf("Poll after a regressing commit: %v", err)
		}
		w.c.Abort()
	})
}

// TestTheRootQueuesRaisedEventsUnderItsRules: the root queues the seam
// events the split writer raises (wire.EventsRaised) in their order and
// applies only its own rules: one Quarantined per split (E5), after the
// verdict only a Gained (E7), one verdict, which tells the leader Retire;
// a decline is answered once its Lost is queued.
func TestTheRootQueuesRaisedEventsUnderItsRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rig := newRootRig(t)
		var toLeader, toUser []any
		rig.v.PIDs.Leader = rig.record(t, "leader", &toLeader)
		user := rig.record(t, "user", &toUser)
		rig.start(t)
		e, v, out, mu := rig.e, rig.v, rig.out, &rig.mu
		gained := func(id coordination.SplitID) coordination.Event {
			return coordination.Gained{Split: coordination.SplitSpec{ID: id}, Epoch: 1}
		}
		raise := func(evs ...coordination.Event) wire.EventsRaised { return wire.EventsRaised{Events: evs} }
		for _, m := range []wire.EventsRaised{
			raise(gained("a"), gained("b")),
			raise(coordination.Quarantined{Split: "q", Attempts: 2}),
			raise(coordination.Quarantined{Split: "q", Attempts: 2}),
			raise(coordination.RevokeRequested{Split: "a"}),
			{Events: []coordination.Event{coordination.Lost{Split: "a"}}, Decline: user},
			raise(coordination.AllComplete{}),
			raise(coordination.Lost{Split: "b"}, coordination.RevokeRequested{Split: "b"}),
			raise(coordination.Quarantined{Split: "r", Attempts: 2}),
			raise(coordination.Stalled{Completed: 1, Quarantined: 1}),
			raise(gained("c")),
		} {
			e.Send(v.PIDs.Root, m)
		}
		synctest.Wait()
		got, err := out.Take()
		want := []coordination.Event{
			gained("a"), gained("b"),
			coordination.Quarantined{Split: "q", Attempts: 2},
			coordination.RevokeRequested{Split: "a"},
			coordination.Lost{Split: "a"},
			coordination.AllComplete{},
			gained("c"),
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("queued %v (%v), want %v", got, err, want)
		}
		mu.Lock()
		defer mu.Unlock()
		if !reflect.DeepEqual(toUser, []any{messages.DeclineRevokeReply{Split: "a"}}) {
			t.Fatalf("the decline's caller was told %v, want one DeclineRevokeReply for a", toUser)
		}
		if !reflect.DeepEqual(toLeader, []any{wire.Retire{}}) {
			t.Fatalf("the leader was told %v, want one Retire", toLeader)
		}
	})
}
