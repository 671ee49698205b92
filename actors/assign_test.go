package actors

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/actors/splitwriter"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

func TestTwoWorkersSplitAFinalPlanDisjointly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		p := workertest.FinalPlan("a", "b", "c", "d")
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
		p := workertest.FinalPlan("a", "b")
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
		took := r.clk.Since(start)
		if took < 1500*time.Millisecond-600*time.Millisecond {
			t.Fatalf("taken after %s, before the lease expired", took)
		}
		// The takeover bound L + L/3 + 100ms (L = 1.5s), checked at the
		// first 125ms step of the rig's clock at or after it.
		const lease = 1500 * time.Millisecond
		if bound := (lease + lease/3 + 100*time.Millisecond).Round(125 * time.Millisecond); took > bound {
			t.Fatalf("taken after %s, beyond the takeover bound %s", took, bound)
		}
		t.Logf("taken over %s after the crash", took)
		g := w2.held[moved]
		if g.Epoch <= old || g.Progress == nil || g.Progress.Watermark != 7 {
			t.Fatalf("takeover gained %+v (old epoch %d)", g, old)
		}
		if err := w2.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRestartWithTheSameIDReclaimsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		p := workertest.FinalPlan("a", "b")
		w := r.start("w1", p)
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 2 })
		if err := w.c.Commit("a", coordination.SplitProgress{Watermark: 4}); err != nil {
			t.Fatal(err)
		}
		w.c.Abort()
		start := r.clk.Now()
		w2 := r.start("w1", p)
		r.until("reclaimed", 10*time.Second, []*member{w2}, func() bool { return len(w2.held) == 2 })
		took := r.clk.Since(start)
		t.Logf("reclaimed %s after the restart", took)
		if took >= 1500*time.Millisecond {
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

// gatedSplitWrites holds every durable split-record Update until gate is
// closed (or the write's context ends) and records the most held at once.
type gatedSplitWrites struct {
	*memstore.Store
	gate chan struct{} // closed by the test
	mu   sync.Mutex
	now  int
	peak int
}

func (s *gatedSplitWrites) Update(ctx context.Context, ks store.Keyspace, key string, v []byte, rev store.Revision) (store.Revision, bool, error) {
	if ks == store.Durable && strings.HasPrefix(key, protocol.PrefixSplit) {
		s.mu.Lock()
		s.now++
		s.peak = max(s.peak, s.now)
		s.mu.Unlock()
		select {
		case <-s.gate:
		case <-ctx.Done():
		}
		s.mu.Lock()
		s.now--
		s.mu.Unlock()
	}
	return s.Store.Update(ctx, ks, key, v, rev)
}

func (s *gatedSplitWrites) peakHeld() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// A crashed worker's splits that are out of attempts are quarantined on
// takeover by every worker that sees them, whatever its assignment: those
// writes draw from the same budget of maxClaimsInFlight as claims.
func TestQuarantinesOnTakeoverShareTheClaimBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3 * splitwriter.MaxClaimsInFlight
		r := newRig(t)
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("s-%03d", i)
		}
		p := workertest.FinalPlan(ids...)
		oneAttempt := func(cfg *coordination.Config) { cfg.MaxAttempts = 1; cfg.MaxInFlight = n }
		crashed := r.start("crashed", p, oneAttempt)
		r.until("the first worker holds every split", 20*time.Second, []*member{crashed}, func() bool { return len(crashed.held) == n })
		crashed.c.Abort()

		gated := &gatedSplitWrites{Store: r.st, gate: make(chan struct{})}
		taker := r.startOn(gated, "taker", p, oneAttempt)
		r.until("the quarantines begin", 10*time.Second, []*member{taker}, func() bool { return gated.peakHeld() > 0 })
		settle()
		if got := gated.peakHeld(); got > splitwriter.MaxClaimsInFlight {
			t.Fatalf("%d split-record writes in flight at once; want at most %d", got, splitwriter.MaxClaimsInFlight)
		}
		close(gated.gate)
		r.until("every split quarantined", 20*time.Second, []*member{taker}, func() bool {
			s, ok := verdictOf(taker).(coordination.Stalled)
			return ok && s.Quarantined == n
		})
		if err := taker.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSeededSplitsPastTheInFlightCapAreHeldWithinAHeartbeat checks the
// claim pipeline: a worker assigned more splits than maxClaimsInFlight,
// all of them seeded before it started, holds every one of them within one
// heartbeat of its first Gained. The cap bounds how many claims run at
// once; a claim that finishes hands its slot to the next candidate at once
// instead of at the next heartbeat.
func TestSeededSplitsPastTheInFlightCapAreHeldWithinAHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		n := 3*splitwriter.MaxClaimsInFlight + 7
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("s%04d", i)
		}
		p := workertest.FinalPlan(ids...)
		seeder := r.start("seeder", p, func(c *coordination.Config) { c.MaxInFlight = 1 })
		r.until("the seeder holds its split", 10*time.Second, []*member{seeder}, func() bool { return len(seeder.held) == 1 })
		if err := seeder.c.Depart(slices.Collect(maps.Keys(seeder.held))...); err != nil {
			t.Fatalf("seeder Depart: %v", err)
		}
		w := r.start("w1", p, func(c *coordination.Config) { c.MaxInFlight = n })
		r.until("the first Gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) > 0 })
		// The shortest heartbeat is LeaseDuration/3 × 0.8 (400ms here).
		beat := time.Duration(float64(r.st.LeaseTTL()/3) * 0.8)
		r.until("every split held", beat-125*time.Millisecond, []*member{w}, func() bool { return len(w.held) == n })
		if err := w.c.Depart(slices.Collect(maps.Keys(w.held))...); err != nil {
			t.Fatalf("Depart: %v", err)
		}
	})
}
