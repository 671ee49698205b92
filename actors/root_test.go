package actors

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
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
