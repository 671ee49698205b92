package actors

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// noCASStore ignores the expected revision of Update: a store that cannot
// host coordination.
type noCASStore struct{ *memstore.Store }

func (s noCASStore) Update(ctx context.Context, ks store.Keyspace, key string, v []byte, _ store.Revision) (store.Revision, bool, error) {
	e, ok, err := s.Store.Get(ctx, ks, key)
	if err != nil || !ok {
		return 0, false, err
	}
	return s.Store.Update(ctx, ks, key, v, e.Revision)
}

// blindCreateStore lets Create overwrite an existing key: a store without
// create-if-absent.
type blindCreateStore struct{ *memstore.Store }

func (s blindCreateStore) Create(ctx context.Context, ks store.Keyspace, key string, v []byte) (store.Revision, bool, error) {
	e, ok, err := s.Store.Get(ctx, ks, key)
	if err != nil || !ok {
		return s.Store.Create(ctx, ks, key, v)
	}
	return s.Store.Update(ctx, ks, key, v, e.Revision)
}

// refusingStore refuses every Update: a store whose compare-and-swap is
// broken.
type refusingStore struct{ *memstore.Store }

func (s refusingStore) Update(context.Context, store.Keyspace, string, []byte, store.Revision) (store.Revision, bool, error) {
	return 0, false, nil
}

// pollError advances the clock until Poll reports an error.
func pollError(r *rig, c *Coordinator) error {
	for range 200 {
		if _, err := c.Poll(); err != nil {
			return err
		}
		r.advance(125 * time.Millisecond)
	}
	return nil
}

func TestStartupFailures(t *testing.T) {
	tests := []struct {
		name   string
		store  func(*memstore.Store) store.Store
		reason string
	}{
		{"a store without compare-and-swap fails the probe", func(m *memstore.Store) store.Store { return noCASStore{m} },
			"store probe: an update at a stale revision succeeded; this store does not enforce compare-and-swap and cannot host coordination"},
		{"a store without create-if-absent fails the probe", func(m *memstore.Store) store.Store { return blindCreateStore{m} },
			"store probe: a second create of the same key succeeded; this store does not enforce create-if-absent and cannot host coordination"},
		{"a store that refuses every update fails the probe", func(m *memstore.Store) store.Store { return refusingStore{m} },
			"store probe: an update at the current revision was refused; this store's compare-and-swap is broken and it cannot host coordination"},
		{"an unreachable store exhausts the phase budget", func(m *memstore.Store) store.Store {
			h := &hangingStore{Store: m}
			h.hang.Store(true)
			return h
		}, "store probe failed 2 times in a row; giving up: store probe: store hangs: context deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t)
				cfg := workertest.Config(t, r.clk, "w1")
				cfg.StartupMaxAttempts = 2
				c, err := Spawn(r.e, tt.store(r.st), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Start(workertest.FinalPlan("a")); err != nil {
					t.Fatal(err)
				}
				err = pollError(r, c)
				if coordination.KindOf(err) != coordination.Fatal || err.(*coordination.Error).Reason != tt.reason {
					t.Fatalf("got %v\nwant Fatal %q", err, tt.reason)
				}
				if err := c.Depart(); coordination.KindOf(err) != coordination.Fatal {
					t.Fatalf("Depart after a failed startup: %v", err)
				}
			})
		})
	}
}

func TestSetWakerAfterStartIsIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		c, err := Spawn(r.e, r.st, workertest.Config(t, r.clk, "w1"))
		if err != nil {
			t.Fatal(err)
		}
		first, late := coordination.NewWaker(), coordination.NewWaker()
		c.SetWaker(first)
		if err := c.Start(workertest.FinalPlan("a")); err != nil {
			t.Fatal(err)
		}
		c.SetWaker(late)
		w := &member{c: c, held: map[coordination.SplitID]coordination.Gained{}}
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		select {
		case <-first.C():
		default:
			t.Fatal("the Waker given before Start was not woken")
		}
		select {
		case <-late.C():
			t.Fatal("the Waker given after Start was woken")
		default:
		}
		if err := c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestFingerprintMismatchIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", workertest.FinalPlan("a"))
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		other := workertest.FinalPlan("a")
		other.FP = "job:v2"
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

// planRaceStore creates the plan record itself just before the first
// Create of it, so that worker loses the race to create it, as workers
// that start together do.
type planRaceStore struct {
	*memstore.Store
	raced bool
}

func (s *planRaceStore) Create(ctx context.Context, ks store.Keyspace, key string, v []byte) (store.Revision, bool, error) {
	if key == protocol.KeyPlan && !s.raced {
		s.raced = true
		if _, _, err := s.Store.Create(ctx, ks, key, v); err != nil {
			return 0, false, err
		}
	}
	return s.Store.Create(ctx, ks, key, v)
}

// A worker that loses the race to create the plan record reads it at once
// instead of backing off (200ms): workers that start together announce
// within the startup hold's quiet interval of each other. Before, the loser
// joined 200ms late, and 2 of 4 fleets of two workers with StartupGrace 1s
// (quiet interval 167ms) were placed on one worker.
func TestLosingThePlanRaceJoinsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		st := &planRaceStore{Store: r.st}
		w := r.startOn(st, "w1", workertest.FinalPlan("a"))
		synctest.Wait() // startup ran as far as it goes without time passing
		if !st.raced {
			t.Fatal("the plan race was not played")
		}
		if _, ok, err := r.st.Get(context.Background(), store.Ephemeral, protocol.WorkerKey("w1")); err != nil || !ok {
			t.Fatalf("no presence once startup settled (found %v, err %v): the loser of the plan race is waiting out a backoff", ok, err)
		}
		w.c.Abort()
	})
}
