package actors

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
)

func hasEvent[E coordination.Event](m *member) (E, bool) {
	for _, ev := range m.evs {
		if e, ok := ev.(E); ok {
			return e, true
		}
	}
	var zero E
	return zero, false
}

func TestPoisonSplitRunsMaxAttemptsThenStalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", finalPlan("p"), func(c *coordination.Config) { c.MaxAttempts = 3 })
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

func TestFailWithAStaleEpochIsFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", finalPlan("a"))
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

func TestRestartWithTheSameIDReclaimsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		p := finalPlan("a", "b")
		w := r.start("w1", p)
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 2 })
		if err := w.c.Commit("a", coordination.SplitProgress{Watermark: 4}); err != nil {
			t.Fatal(err)
		}
		w.c.Abort()
		start := r.clk.Now()
		w2 := r.start("w1", p)
		r.until("reclaimed", 10*time.Second, []*member{w2}, func() bool { return len(w2.held) == 2 })
		if took := r.clk.Since(start); took >= 1500*time.Millisecond {
			t.Fatalf("reclaim took %s", took)
		}
		if g := w2.held["a"]; g.Epoch != 2 || g.Progress == nil || g.Progress.Watermark != 4 {
			t.Fatalf("reclaimed %+v", g)
		}
		if err := w2.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestLiveTwinsAreFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		p := finalPlan("a")
		w := r.start("w1", p)
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		twin := r.start("w1", p)
		var err error
		for i := 0; i < 80 && err == nil; i++ {
			r.advance(125 * time.Millisecond)
			if _, err = w.c.Poll(); err == nil {
				_, err = twin.c.Poll()
			}
		}
		if coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), `InstanceID "w1" is in use by another live worker`) {
			t.Fatalf("twins: %v", err)
		}
	})
}

func TestFingerprintMismatchIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", finalPlan("a"))
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		other := finalPlan("a")
		other.fp = "job:v2"
		w2 := r.start("w2", other)
		var err error
		for i := 0; i < 40 && err == nil; i++ {
			r.advance(125 * time.Millisecond)
			_, err = w2.c.Poll()
		}
		want := "job fingerprint mismatch: this store holds the job\n  job:v1\nbut this worker was started for\n  job:v2\nuse a separate store namespace per job"
		if coordination.KindOf(err) != coordination.Fatal || err.(*coordination.Error).Reason != want {
			t.Fatalf("mismatch: %q", err)
		}
		w.pump(t)
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestStoreOutageSelfFencesAndRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		hs := &hangingStore{Store: r.st}
		c, err := Spawn(r.e, hs, testConfig(t, r.clk, "w1"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Abort)
		w := &member{c: c, held: map[coordination.SplitID]coordination.Gained{}}
		if err := c.Start(finalPlan("a")); err != nil {
			t.Fatal(err)
		}
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		first := w.held["a"].Epoch
		hs.hang.Store(true)
		r.until("self-fenced", 5*time.Second, []*member{w}, func() bool { return len(w.held) == 0 })
		if _, ok := hasEvent[coordination.Lost](w); !ok {
			t.Fatalf("no Lost: %v", w.evs)
		}
		hs.hang.Store(false)
		r.until("re-gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		if g := w.held["a"]; g.Epoch <= first {
			t.Fatalf("re-gained %+v after epoch %d", g, first)
		}
		if err := c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestLeaderCrashHandsPlanningOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		p := finalPlan("a", "b", "c")
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
