package actors

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
)

func TestPoisonSplitRunsMaxAttemptsThenStalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", workertest.FinalPlan("p"), func(c *coordination.Config) { c.MaxAttempts = 3 })
		tenancies := 0
		var lastEpoch coordination.LeaseEpoch
		r.until("stalled", 30*time.Second, []*member{w}, func() bool {
			if g, ok := w.held["p"]; ok && g.Epoch != lastEpoch {
				lastEpoch = g.Epoch
				tenancies++
				delete(w.held, "p")
				if err := w.c.Fail("p", g.Epoch, "poison"); err != nil {
					t.Fatalf("Fail: %v", err)
				}
			}
			_, ok := hasEvent[coordination.Stalled](w)
			return ok
		})
		if tenancies != 3 {
			t.Fatalf("%d tenancies, want 3", tenancies)
		}
		q, _ := hasEvent[coordination.Quarantined](w)
		if q.Split != "p" || q.Attempts != 3 {
			t.Fatalf("quarantined %+v", q)
		}
		if s, _ := hasEvent[coordination.Stalled](w); s.Completed != 0 || s.Quarantined != 1 {
			t.Fatalf("stalled %+v", s)
		}
		if _, ok := hasEvent[coordination.Lost](w); ok {
			t.Fatalf("Fail emitted Lost: %v", w.evs)
		}
		if _, ok := w.evs[len(w.evs)-1].(coordination.Stalled); !ok {
			t.Fatalf("verdict not last: %v", w.evs)
		}
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}
