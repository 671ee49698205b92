package actors

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

func TestSingleWorkerCompletesFinalPlan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		c, err := Spawn(r.e, r.st, workertest.Config(t, r.clk, "w1"))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(workertest.FinalPlan("a", "b")); err != nil {
			t.Fatal(err)
		}
		var evs []coordination.Event
		gained := map[coordination.SplitID]coordination.Gained{}
		for i := 0; i < 40 && len(gained) < 2; i++ {
			r.advance(125 * time.Millisecond)
			collect(t, c, &evs)
			for _, ev := range evs {
				if g, ok := ev.(coordination.Gained); ok {
					gained[g.Split.ID] = g
				}
			}
		}
		if len(gained) != 2 {
			t.Fatalf("gained %v, events %v", gained, evs)
		}
		for id := range gained {
			if err := c.Commit(id, coordination.SplitProgress{Watermark: 10, Completed: true}); err != nil {
				t.Fatalf("commit %s: %v", id, err)
			}
		}
		done := false
		for i := 0; i < 40 && !done; i++ {
			r.advance(125 * time.Millisecond)
			collect(t, c, &evs)
			for _, ev := range evs {
				if _, ok := ev.(coordination.AllComplete); ok {
					done = true
				}
			}
		}
		if !done {
			t.Fatalf("no AllComplete; events %v", evs)
		}
		if _, ok := evs[len(evs)-1].(coordination.AllComplete); !ok {
			t.Fatalf("verdict is not the last event: %v", evs)
		}
		if err := c.Depart(); err != nil {
			t.Fatalf("Depart: %v", err)
		}
	})
}

// Appendix A 3, 16, 17: Release keeps the worker a member; Depart hands back
// every owned split, including unpolled gains, deletes presence, and the
// worker never writes its presence key again.
func TestReleaseKeepsMembershipDepartLeavesForGood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", workertest.FinalPlan("a", "b"))
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 2 })
		if err := w.c.Release("a", "not-held"); err != nil {
			t.Fatal(err)
		}
		delete(w.held, "a")
		// Still a member and still assigned: it claims the split again.
		r.until("re-gained", 10*time.Second, []*member{w}, func() bool { _, ok := w.held["a"]; return ok })
		if g := w.held["a"]; g.Epoch != 2 {
			t.Fatalf("re-gained %+v", g)
		}
		if _, ok, _ := r.st.Get(context.Background(), store.Ephemeral, protocol.WorkerKey("w1")); !ok {
			t.Fatal("presence gone after Release")
		}
		// Depart without naming anything: both splits are handed back.
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
		for _, id := range []coordination.SplitID{"a", "b"} {
			e, _, _ := r.st.Get(context.Background(), store.Durable, protocol.SplitKey(id))
			rec, _ := protocol.DecodeSplit(e.Key, e.Value, protocol.Fingerprint("job:v1"))
			if rec.Owner != "" || rec.Nonce != "" {
				t.Fatalf("split %s not handed back: %+v", id, rec)
			}
		}
		r.advance(3 * time.Second)
		if _, ok, _ := r.st.Get(context.Background(), store.Ephemeral, protocol.WorkerKey("w1")); ok {
			t.Fatal("presence written after Depart")
		}
		if _, ok, _ := r.st.Get(context.Background(), store.Ephemeral, protocol.KeyLeader); ok {
			t.Fatal("leadership kept after Depart")
		}
	})
}

// §28: every record carries worker; a normal join, completion and
// departure logs nothing at warn or error, and announces peers.
func TestNormalPathLogsNoFault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		var mu sync.Mutex
		var recs []string
		h := workertest.LogCapture{Mu: &mu, Recs: &recs, Next: slog.NewTextHandler(t.Output(), nil)}
		p := workertest.FinalPlan("a", "b")
		start := func(id string) *member {
			cfg := workertest.Config(t, r.clk, id)
			cfg.Logger = slog.New(h)
			c, err := Spawn(r.e, r.st, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Abort)
			if err := c.Start(p); err != nil {
				t.Fatal(err)
			}
			return &member{c: c, held: map[coordination.SplitID]coordination.Gained{}}
		}
		w1, w2 := start("w1"), start("w2")
		ms := []*member{w1, w2}
		seen := map[*member]int{}
		r.until("one each", 10*time.Second, ms, func() bool {
			for _, m := range ms { // a well-behaved driver drains what is revoked
				evs := m.evs[seen[m]:]
				seen[m] = len(m.evs)
				for _, ev := range evs {
					if rv, ok := ev.(coordination.RevokeRequested); ok {
						if _, held := m.held[rv.Split]; held {
							if err := m.c.ReleaseDrained(rv.Split); err != nil {
								t.Fatal(err)
							}
							delete(m.held, rv.Split)
						}
					}
				}
			}
			return len(w1.held) == 1 && len(w2.held) == 1
		})
		for _, m := range ms {
			for id := range m.held {
				if err := m.c.Commit(id, coordination.SplitProgress{Watermark: 1, Completed: true}); err != nil {
					t.Fatal(err)
				}
			}
		}
		r.until("verdicts", 10*time.Second, ms, func() bool { return verdictOf(w1) != nil && verdictOf(w2) != nil })
		for _, m := range ms {
			if err := m.c.Depart(); err != nil {
				t.Fatal(err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		joined := false
		for _, rec := range recs {
			if strings.HasPrefix(rec, "WARN") || strings.HasPrefix(rec, "ERROR") {
				t.Errorf("normal path logged %q", rec)
			}
			if !strings.Contains(rec, "instance=w") {
				t.Errorf("record without worker: %q", rec)
			}
			if strings.HasPrefix(rec, "INFO peer joined") {
				joined = true
			}
		}
		if !joined {
			t.Errorf("no 'peer joined' in %v", recs)
		}
	})
}

// hangingStore blocks every operation until its context ends while hang is
// set (a store that stopped answering).
type hangingStore struct {
	*memstore.Store
	hang atomic.Bool
}

func TestPollNeverBlocksWhileTheStoreHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		hs := &hangingStore{Store: r.st}
		cfg := workertest.Config(t, r.clk, "w1")
		c, err := Spawn(r.e, hs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Abort)
		w := &member{c: c, held: map[coordination.SplitID]coordination.Gained{}}
		if err := c.Start(workertest.FinalPlan("a")); err != nil {
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

// leaderCreateHangs blocks Creates of the leader key until their context
// ends, and says when the first one is in flight.
type leaderCreateHangs struct {
	*memstore.Store
	inFlight chan struct{}
	once     sync.Once
}

func (s *leaderCreateHangs) Create(ctx context.Context, ks store.Keyspace, key string, value []byte) (store.Revision, bool, error) {
	if key != protocol.KeyLeader {
		return s.Store.Create(ctx, ks, key, value)
	}
	s.once.Do(func() { close(s.inFlight) })
	<-ctx.Done()
	return 0, false, coordination.Errorf(coordination.Retryable, "store hangs: %w", ctx.Err())
}

// An election cut short by the worker's own shutdown is not a fault: it
// logs nothing at warn or error.
func TestShutdownDuringAnElectionLogsNoFault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		var mu sync.Mutex
		var recs []string
		st := &leaderCreateHangs{Store: r.st, inFlight: make(chan struct{})}
		cfg := workertest.Config(t, r.clk, "w1")
		cfg.Logger = slog.New(workertest.LogCapture{Mu: &mu, Recs: &recs, Next: slog.NewTextHandler(t.Output(), nil)})
		c, err := Spawn(r.e, st, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(workertest.FinalPlan("a")); err != nil {
			t.Fatal(err)
		}
		<-st.inFlight
		c.Abort()
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, rec := range recs {
			if strings.HasPrefix(rec, "WARN") || strings.HasPrefix(rec, "ERROR") {
				t.Errorf("shutdown logged %q", rec)
			}
		}
	})
}
