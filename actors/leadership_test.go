package actors

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
)

func TestLeaderCrashHandsPlanningOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		p := workertest.FinalPlan("a", "b", "c")
		w1 := r.start("w1", p)
		r.until("w1 holds all", 10*time.Second, []*member{w1}, func() bool { return len(w1.held) == 3 })
		w2 := r.start("w2", p)
		w1.c.Abort()
		r.until("w2 holds all", 20*time.Second, []*member{w2}, func() bool { return len(w2.held) == 3 })
		for id := range w2.held {
			if err := w2.c.Commit(id, coordination.SplitProgress{Watermark: 1, Completed: true}); err != nil {
				t.Fatal(err)
			}
		}
		r.until("verdict", 10*time.Second, []*member{w2}, func() bool { return verdictOf(w2) != nil })
		if _, ok := verdictOf(w2).(coordination.AllComplete); !ok {
			t.Fatalf("verdict %v", verdictOf(w2))
		}
		if err := w2.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPlannerPanicIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", &workertest.Planner{FP: "job:v1", Panic: "boom"})
		var err error
		for i := 0; i < 40 && err == nil; i++ {
			r.advance(125 * time.Millisecond)
			_, err = w.c.Poll()
		}
		if coordination.KindOf(err) != coordination.Fatal || err.(*coordination.Error).Reason != "planner panic: boom" {
			t.Fatalf("Poll: %v", err)
		}
		if err := w.c.Commit("a", coordination.SplitProgress{}); err == nil || err.Error() != "coordination error (fatal): planner panic: boom" {
			t.Fatalf("Commit after failure: %v", err)
		}
		if err := w.c.Depart(); coordination.KindOf(err) != coordination.Fatal {
			t.Fatalf("Depart after failure: %v", err)
		}
	})
}

func TestOpenPlanGrowsAndCompletesOnlyWhenSealed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", &growingPlanner{final: 3})
		r.until("three splits", 20*time.Second, []*member{w}, func() bool {
			for id, g := range w.held {
				if g.Progress == nil || !g.Progress.Completed {
					if err := w.c.Commit(id, coordination.SplitProgress{Watermark: 1, Completed: true}); err != nil {
						t.Fatal(err)
					}
					delete(w.held, id)
				}
			}
			return verdictOf(w) != nil
		})
		n := 0
		for _, ev := range w.evs {
			if _, ok := ev.(coordination.Gained); ok {
				n++
			}
		}
		if n != 3 {
			t.Fatalf("gained %d splits, want 3: %v", n, w.evs)
		}
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

// growingPlanner returns an open plan that grows by one split per run
// until sealed.
type growingPlanner struct {
	mu    sync.Mutex
	final int
}

func (p *growingPlanner) Fingerprint() string { return "grow:v1" }

func (p *growingPlanner) Plan(ctx context.Context, pc coordination.PlanContext) (coordination.SplitPlan, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	if pc.PlannerState != nil {
		n = int(pc.PlannerState[0])
	}
	n++
	plan := coordination.SplitPlan{Finality: coordination.PlanOpen, PlannerState: []byte{byte(n)}}
	if n >= p.final {
		plan.Finality = coordination.PlanFinal
	}
	for i := range n {
		plan.Splits = append(plan.Splits, coordination.PlannedSplit{Spec: coordination.SplitSpec{ID: coordination.SplitID(string(rune('a' + i)))}})
	}
	return plan, nil
}
