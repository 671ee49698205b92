package actors

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
)

func TestDeclineForcesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		p := workertest.FinalPlan("a", "b")
		w1 := r.start("w1", p)
		r.until("w1 holds both", 10*time.Second, []*member{w1}, func() bool { return len(w1.held) == 2 })
		for id := range w1.held {
			if err := w1.c.Commit(id, coordination.SplitProgress{Watermark: 6}); err != nil {
				t.Fatal(err)
			}
		}
		w2 := r.start("w2", p)
		ms := []*member{w1, w2}
		r.until("revocation", 10*time.Second, ms, func() bool { _, ok := hasEvent[coordination.RevokeRequested](w1); return ok })
		rv, _ := hasEvent[coordination.RevokeRequested](w1)
		if err := w1.c.DeclineRevoke(rv.Split); err != nil {
			t.Fatal(err)
		}
		w1.pump(t)
		if lost, ok := hasEvent[coordination.Lost](w1); !ok || lost.Split != rv.Split {
			t.Fatalf("no Lost after decline: %v", w1.evs)
		}
		r.until("w2 gains it", 10*time.Second, ms, func() bool { _, ok := w2.held[rv.Split]; return ok })
		if g := w2.held[rv.Split]; g.Progress == nil || g.Progress.Watermark != 6 {
			t.Fatalf("gained %+v", g)
		}
		for _, m := range ms {
			if err := m.c.Depart(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestRebalanceDelayWithholdsACrashedWorkersSplits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
		min   time.Duration
		max   time.Duration
	}{
		{"zero delay moves within three leases", 0, 0, 3 * 1500 * time.Millisecond},
		{"five leases withhold for at least three", 5 * 1500 * time.Millisecond, 3 * 1500 * time.Millisecond, 8 * 1500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t)
				p := workertest.FinalPlan("a", "b", "c", "d")
				mut := func(c *coordination.Config) { c.RebalanceDelay = tc.delay }
				w1 := r.start("w1", p, mut)
				w2 := r.start("w2", p, mut)
				ms := []*member{w1, w2}
				seen := map[*member]int{}
				r.until("split 2/2", 20*time.Second, ms, func() bool {
					for _, m := range ms {
						evs := m.evs[seen[m]:]
						seen[m] = len(m.evs)
						for _, ev := range evs {
							if rv, ok := ev.(coordination.RevokeRequested); ok {
								if _, held := m.held[rv.Split]; held {
									_ = m.c.ReleaseDrained(rv.Split)
									delete(m.held, rv.Split)
								}
							}
						}
					}
					return len(w1.held) == 2 && len(w2.held) == 2
				})
				victim, survivor := w2, w1
				if _, ok := hasEvent[coordination.AllComplete](w1); ok {
					t.Fatal("unexpected verdict")
				}
				victim.c.Abort()
				start := r.clk.Now()
				r.until("survivor holds all", tc.max+5*time.Second, []*member{survivor}, func() bool { return len(survivor.held) == 4 })
				took := r.clk.Since(start)
				if took < tc.min || took > tc.max {
					t.Fatalf("moved after %s, want within [%s, %s]", took, tc.min, tc.max)
				}
				if err := survivor.c.Depart(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
