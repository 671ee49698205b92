package actors

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

func TestPlannerPanicIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", &testPlanner{fp: "job:v1", panic: "boom"})
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

type panicky struct{}

func (panicky) Receive(c *actor.Context) {
	if _, ok := c.Message().(string); ok {
		panic("boom")
	}
}

func TestActorPanicSurfacesAsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", finalPlan("a"))
		pid := r.e.Spawn(func() actor.Receiver { return panicky{} }, "panicky", actor.WithMiddleware(recoverMiddleware(w.c.v, "panicky")))
		for range 5 { // hollywood would kill the process on the fourth restart
			r.e.Send(pid, "please panic")
		}
		settle()
		evs, err := w.c.Poll()
		for err == nil && len(evs) > 0 {
			evs, err = w.c.Poll()
		}
		if coordination.KindOf(err) != coordination.Fatal || err.(*coordination.Error).Reason != "internal error: boom" {
			t.Fatalf("Poll: %v, %v", evs, err)
		}
		<-r.e.Poison(pid).Done()
		w.c.Abort()
	})
}

// hangingStore blocks every operation until its context ends while hang is
// set (a store that stopped answering).
type hangingStore struct {
	*memstore.Store
	hang atomic.Bool
}

func (s *hangingStore) wait(ctx context.Context) error {
	<-ctx.Done()
	return coordination.Errorf(coordination.Retryable, "store hangs: %w", ctx.Err())
}

func (s *hangingStore) Create(ctx context.Context, ks store.Keyspace, key string, value []byte) (store.Revision, bool, error) {
	if s.hang.Load() {
		return 0, false, s.wait(ctx)
	}
	return s.Store.Create(ctx, ks, key, value)
}

func (s *hangingStore) Update(ctx context.Context, ks store.Keyspace, key string, value []byte, rev store.Revision) (store.Revision, bool, error) {
	if s.hang.Load() {
		return 0, false, s.wait(ctx)
	}
	return s.Store.Update(ctx, ks, key, value, rev)
}

func (s *hangingStore) Get(ctx context.Context, ks store.Keyspace, key string) (store.Entry, bool, error) {
	if s.hang.Load() {
		return store.Entry{}, false, s.wait(ctx)
	}
	return s.Store.Get(ctx, ks, key)
}

func (s *hangingStore) Delete(ctx context.Context, ks store.Keyspace, key string, rev store.Revision) (bool, error) {
	if s.hang.Load() {
		return false, s.wait(ctx)
	}
	return s.Store.Delete(ctx, ks, key, rev)
}

func (s *hangingStore) List(ctx context.Context, ks store.Keyspace, prefix string) ([]store.Entry, error) {
	if s.hang.Load() {
		return nil, s.wait(ctx)
	}
	return s.Store.List(ctx, ks, prefix)
}

func TestPollNeverBlocksWhileTheStoreHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		hs := &hangingStore{Store: r.st}
		cfg := testConfig(t, r.clk, "w1")
		c, err := Spawn(r.e, hs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Abort)
		w := &member{c: c, held: map[coordination.SplitID]coordination.Gained{}}
		if err := c.Start(finalPlan("a")); err != nil {
			t.Fatal(err)
		}
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		hs.hang.Store(true)

		start := time.Now()
		for range 100 {
			if _, err := c.Poll(); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("Poll took %s of bubble time", d)
		}

		start = time.Now()
		err = c.Commit("a", coordination.SplitProgress{Watermark: 1})
		if coordination.KindOf(err) != coordination.Retryable {
			t.Fatalf("Commit: %v", err)
		}
		if d := time.Since(start); d > 3*cfg.OpTimeout+100*time.Millisecond {
			t.Fatalf("Commit took %s", d)
		}

		stop := make(chan struct{})
		close(stop)
		c.SetStop(stop)
		start = time.Now()
		err = c.Commit("a", coordination.SplitProgress{Watermark: 1})
		if coordination.KindOf(err) != coordination.Retryable || !strings.HasPrefix(err.(*coordination.Error).Reason, "stopping: commit did not complete before the stop; it may still land") {
			t.Fatalf("Commit after stop: %v", err)
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Fatalf("Commit after stop took %s", d)
		}

		start = time.Now()
		errs := c.CommitFinal([]coordination.Commit{{Split: "a", Progress: coordination.SplitProgress{Watermark: 2}}})
		if d := time.Since(start); d > cfg.OpTimeout+100*time.Millisecond {
			t.Fatalf("CommitFinal took %s", d)
		}
		if coordination.KindOf(errs[0]) != coordination.Retryable {
			t.Fatalf("CommitFinal: %v", errs)
		}
		start = time.Now()
		if err := c.Depart(); coordination.KindOf(err) != coordination.Retryable || err.(*coordination.Error).Reason != "hand-back did not confirm for splits [a]; they are handed back again later, or taken once this worker's session ends" {
			t.Fatalf("Depart: %v", err)
		}
		if d := time.Since(start); d > 2*cfg.OpTimeout+100*time.Millisecond {
			t.Fatalf("Depart took %s", d)
		}
	})
}
