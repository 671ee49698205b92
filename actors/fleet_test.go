package actors

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
)

// member is one worker of a small in-package fleet with its event log.
type member struct {
	c    *Coordinator
	evs  []coordination.Event
	held map[coordination.SplitID]coordination.Gained
}

func (r *rig) start(id string, p coordination.Planner, mut ...func(*coordination.Config)) *member {
	r.tb.Helper()
	cfg := testConfig(r.tb, r.clk, id)
	for _, f := range mut {
		f(&cfg)
	}
	c, err := Spawn(r.e, r.st, cfg)
	if err != nil {
		r.tb.Fatal(err)
	}
	r.tb.Cleanup(c.Abort)
	if err := c.Start(p); err != nil {
		r.tb.Fatal(err)
	}
	return &member{c: c, held: map[coordination.SplitID]coordination.Gained{}}
}

// pump polls m and folds its events.
func (m *member) pump(tb testing.TB) {
	tb.Helper()
	got, err := m.c.Poll()
	if err != nil {
		tb.Fatalf("%s: Poll: %v", m.c.InstanceID(), err)
	}
	for _, ev := range got {
		switch e := ev.(type) {
		case coordination.Gained:
			m.held[e.Split.ID] = e
		case coordination.Lost:
			delete(m.held, e.Split)
		}
	}
	m.evs = append(m.evs, got...)
}

// until advances the clock until cond holds, pumping every member.
func (r *rig) until(what string, limit time.Duration, ms []*member, cond func() bool) {
	r.tb.Helper()
	for waited := time.Duration(0); ; waited += 125 * time.Millisecond {
		for _, m := range ms {
			m.pump(r.tb)
		}
		if cond() {
			return
		}
		if waited > limit {
			var s string
			for _, m := range ms {
				s += fmt.Sprintf("\n%s: %v", m.c.InstanceID(), m.evs)
			}
			r.tb.Fatalf("timed out waiting for %s:%s", what, s)
		}
		r.advance(125 * time.Millisecond)
	}
}

func verdictOf(m *member) coordination.Event {
	if len(m.evs) == 0 {
		return nil
	}
	switch e := m.evs[len(m.evs)-1].(type) {
	case coordination.AllComplete, coordination.Stalled:
		return e
	}
	return nil
}

func TestTwoWorkersSplitAFinalPlanDisjointly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		p := finalPlan("a", "b", "c", "d")
		w1 := r.start("w1", p)
		w2 := r.start("w2", p)
		ms := []*member{w1, w2}
		r.until("both hold two", 10*time.Second, ms, func() bool { return len(w1.held) == 2 && len(w2.held) == 2 })
		for id := range w1.held {
			if _, dup := w2.held[id]; dup {
				t.Fatalf("split %s held twice", id)
			}
		}
		for _, m := range ms {
			for id := range m.held {
				if err := m.c.Commit(id, coordination.SplitProgress{Watermark: 5, Completed: true}); err != nil {
					t.Fatalf("commit %s: %v", id, err)
				}
			}
		}
		r.until("verdicts", 10*time.Second, ms, func() bool { return verdictOf(w1) != nil && verdictOf(w2) != nil })
		for _, m := range ms {
			if _, ok := verdictOf(m).(coordination.AllComplete); !ok {
				t.Fatalf("%s: verdict %v", m.c.InstanceID(), verdictOf(m))
			}
			if err := m.c.Depart(); err != nil {
				t.Fatalf("Depart: %v", err)
			}
		}
	})
}

func TestCrashedOwnerSplitsMoveAfterLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		p := finalPlan("a", "b")
		w1 := r.start("w1", p)
		w2 := r.start("w2", p)
		ms := []*member{w1, w2}
		r.until("both hold one", 10*time.Second, ms, func() bool { return len(w1.held) == 1 && len(w2.held) == 1 })
		var moved coordination.SplitID
		for id := range w1.held {
			moved = id
			if err := w1.c.Commit(id, coordination.SplitProgress{Watermark: 7}); err != nil {
				t.Fatal(err)
			}
		}
		old := w1.held[moved].Epoch
		w1.c.Abort()
		if _, err := w1.c.Poll(); coordination.KindOf(err) != coordination.Fatal {
			t.Fatalf("Poll after Abort: %v", err)
		}
		start := r.clk.Now()
		r.until("w2 takes over", 10*time.Second, []*member{w2}, func() bool { return len(w2.held) == 2 })
		// The lease was last renewed at most one jittered heartbeat (0.6s)
		// before the crash.
		if took := r.clk.Since(start); took < 1500*time.Millisecond-600*time.Millisecond {
			t.Fatalf("taken after %s, before the lease expired", took)
		}
		g := w2.held[moved]
		if g.Epoch <= old || g.Progress == nil || g.Progress.Watermark != 7 {
			t.Fatalf("takeover gained %+v (old epoch %d)", g, old)
		}
		if err := w2.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestReleaseLetsAPeerClaimWithinALease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		p := finalPlan("a", "b")
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
