package actors

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/actors/watch"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// droppingStore's durable watches silently lose the live events of one key,
// as a broken backend might: only the reconcile listing can heal the view.
type droppingStore struct {
	*memstore.Store
	drop string
	mu   sync.Mutex
	lost int
}

type filteredWatcher struct {
	store.Watcher
	ch chan store.WatchEvent
}

func (w *filteredWatcher) Events() <-chan store.WatchEvent { return w.ch }

func (s *droppingStore) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	in, err := s.Store.Watch(ctx, ks, prefix)
	if err != nil || ks != store.Durable {
		return in, err
	}
	out := &filteredWatcher{Watcher: in, ch: make(chan store.WatchEvent)} // closed when in's channel closes
	go func() {
		defer close(out.ch)
		live := false
		for ev := range in.Events() {
			if ev.Kind == store.SnapshotDone {
				live = true
			}
			if live && ev.Entry.Key == s.drop {
				s.mu.Lock()
				s.lost++
				s.mu.Unlock()
				continue
			}
			select {
			case out.ch <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// §11.4: a live event the watch never delivered is healed by the reconcile
// listing within about one ReconcileInterval.
func TestReconcileHealsAMissedWatchEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		ds := &droppingStore{Store: r.st, drop: protocol.AssignKey("w1")}
		// No startup hold: the assignment (whose event is dropped) is
		// published as soon as the plan is, so the clock runs from there.
		w := r.startOn(ds, "w1", workertest.FinalPlan("a"), func(c *coordination.Config) { c.StartupGrace = 0 })
		start := r.clk.Now()
		r.until("gained through the reconcile", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		ds.mu.Lock()
		lost := ds.lost
		ds.mu.Unlock()
		if lost == 0 {
			t.Fatal("no event was dropped; the test proves nothing")
		}
		if took := r.clk.Since(start); took > 2*400*time.Millisecond+500*time.Millisecond {
			t.Fatalf("healed after %s", took)
		}
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

// brokenWatchStore breaks every durable watch once after its snapshot.
type brokenWatchStore struct {
	*memstore.Store
	mu     sync.Mutex
	breaks int
}

type breakingWatcher struct {
	store.Watcher
	ch  chan store.WatchEvent
	err error
}

func (w *breakingWatcher) Events() <-chan store.WatchEvent { return w.ch }
func (w *breakingWatcher) Err() error                      { return w.err }

func (s *brokenWatchStore) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	in, err := s.Store.Watch(ctx, ks, prefix)
	s.mu.Lock()
	doBreak := err == nil && ks == store.Durable && s.breaks == 0
	if doBreak {
		s.breaks++
	}
	s.mu.Unlock()
	if !doBreak {
		return in, err
	}
	out := &breakingWatcher{Watcher: in, ch: make(chan store.WatchEvent)}
	go func() {
		defer close(out.ch)
		for ev := range in.Events() {
			select {
			case out.ch <- ev:
			case <-ctx.Done():
				return
			}
			if ev.Kind == store.SnapshotDone {
				in.Stop()
				for range in.Events() {
				}
				out.err = coordination.Errorf(coordination.Retryable, "injected: watch broken")
				return
			}
		}
	}()
	return out, nil
}

// §11.3: a broken watch is re-established in the background and the worker
// goes on to claim and complete.
func TestBrokenWatchIsReestablished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		bs := &brokenWatchStore{Store: r.st}
		w := r.startOn(bs, "w1", workertest.FinalPlan("a"))
		r.until("gained after a re-watch", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		if err := w.c.Commit("a", coordination.SplitProgress{Watermark: 1, Completed: true}); err != nil {
			t.Fatal(err)
		}
		r.until("verdict", 10*time.Second, []*member{w}, func() bool { return verdictOf(w) != nil })
		if bs.breaks != 1 {
			t.Fatalf("%d breaks", bs.breaks)
		}
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

// tappedWatches counts the durable watches opened and the events their
// consumer (the worker's pump) took from them.
type tappedWatches struct {
	*memstore.Store
	mu     sync.Mutex
	opened int
	taken  int
}

func (s *tappedWatches) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	in, err := s.Store.Watch(ctx, ks, prefix)
	if err != nil || ks != store.Durable {
		return in, err
	}
	s.mu.Lock()
	s.opened++
	s.mu.Unlock()
	out := &filteredWatcher{Watcher: in, ch: make(chan store.WatchEvent)} // closed when in's channel closes
	go func() {
		defer close(out.ch)
		for ev := range in.Events() {
			select {
			case out.ch <- ev:
				s.mu.Lock()
				s.taken++
				s.mu.Unlock()
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func (s *tappedWatches) counts() (opened, taken int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opened, s.taken
}

// unknownKeyLog is the watch actor's Debug record for a key of no known
// shape.
const unknownKeyLog = "ignoring key of unknown shape"

// stallingLog makes one actor slow through its log handler: while the gate
// is shut, a record of actor stalls (the watch actor only on unknownKeyLog)
// holds the actor until the gate opens. Records of unknown keys are dropped,
// to keep the test's output small.
type stallingLog struct {
	slog.Handler
	gate  *logGate
	stall string // the actor to hold
	actor string // the actor this handler logs for, from Logger.With
}

// logGate is shut by the test and opened again; opening an open gate does
// nothing.
type logGate struct {
	mu   sync.Mutex
	shut chan struct{} // nil while open; closed when opened again
}

func (g *logGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shut = make(chan struct{})
}

func (g *logGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut != nil {
		close(g.shut)
		g.shut = nil
	}
}

func (g *logGate) pass() {
	g.mu.Lock()
	shut := g.shut
	g.mu.Unlock()
	if shut != nil {
		<-shut
	}
}

func (h stallingLog) Handle(ctx context.Context, r slog.Record) error {
	if h.actor == h.stall && (h.stall != "watch" || r.Message == unknownKeyLog) {
		h.gate.pass()
	}
	if r.Message == unknownKeyLog {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h stallingLog) WithAttrs(as []slog.Attr) slog.Handler {
	out := h
	out.Handler = h.Handler.WithAttrs(as)
	for _, a := range as {
		if a.Key == "actor" {
			out.actor = a.Value.String()
		}
	}
	return out
}

func (h stallingLog) WithGroup(name string) slog.Handler {
	out := h
	out.Handler = h.Handler.WithGroup(name)
	return out
}

// fenceByIntruder rewrites split id's record as claimed by a worker that
// is not live, as a takeover would: its holder must see it and let go.
func fenceByIntruder(t *testing.T, st store.Store, id coordination.SplitID) {
	t.Helper()
	key := protocol.SplitKey(id)
	e, _, err := st.Get(context.Background(), store.Durable, key)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := protocol.DecodeSplit(key, e.Value, protocol.Fingerprint("job:v1"))
	if err != nil {
		t.Fatal(err)
	}
	workertest.Put(t, st, key, protocol.EncodeSplit(rec.Claim("intruder", "intruder-nonce", rec.Epoch+1, false, 0)), uint64(e.Revision))
}

// A flood of watch events against a stalled actor, the watch actor itself
// or one it fans out to: the pump stops taking events once the hand-off's
// credit is spent, so what the worker holds stays bounded whatever the
// flood's size, the store's lag limit breaks the watch, and once the actor
// resumes the worker re-watches with a fresh snapshot and misses nothing
// that happened meanwhile: it lets go of a split fenced after the flood, and
// a member that joined during the stall gets its share of the splits.
func TestWatchFloodAgainstAStalledActorStaysBounded(t *testing.T) {
	// More than the hand-off's credit and memstore's lag limit (4096
	// events) together, so the watch must break.
	const flood = worker.WatchBacklog + 4096 + 1024
	// paced lets the worker take what it will every 256 writes, so that a
	// pump without a bound keeps up with the flood (and the store never
	// breaks its watch) rather than losing the race to the writer.
	paced := func(i int) {
		if i%256 == 255 {
			settle()
		}
	}
	for _, tt := range []struct {
		name  string
		stall string
		// flood writes the flood; the second worker is started before it
		// when joinFirst (its arrival is what makes the leader log).
		flood     func(t *testing.T, st store.Store)
		joinFirst bool
	}{
		{name: "the watch actor", stall: "watch", flood: func(t *testing.T, st store.Store) {
			for i := range flood {
				workertest.Put(t, st, fmt.Sprintf("%sflood.%05d", protocol.PrefixJob, i), []byte("x"), 0)
				paced(i)
			}
		}},
		{name: "the leader, a subscriber", stall: "leader", joinFirst: true, flood: func(t *testing.T, st store.Store) {
			key := protocol.SplitKey("a")
			e, _, err := st.Get(context.Background(), store.Durable, key)
			if err != nil {
				t.Fatal(err)
			}
			rev := uint64(e.Revision)
			for i := range flood {
				rev = workertest.Put(t, st, key, e.Value, rev) // the same record at a new revision
				paced(i)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t)
				tw := &tappedWatches{Store: r.st}
				gate := &logGate{}
				slow := func(stall string) func(*coordination.Config) {
					return func(cfg *coordination.Config) {
						cfg.Logger = slog.New(stallingLog{Handler: cfg.Logger.Handler(), gate: gate, stall: stall})
						cfg.StartupGrace = 0
						cfg.ReconcileInterval = time.Hour // only the re-watch's snapshot may heal the view
					}
				}
				p := workertest.FinalPlan("a", "b")
				w1 := r.startOn(tw, "w1", p, slow(tt.stall))
				r.until("w1 holds both splits", 10*time.Second, []*member{w1}, func() bool { return len(w1.held) == 2 })
				_, before := tw.counts()

				gate.close()
				t.Cleanup(gate.open) // a failed run must not leave the actor stalled
				var w2 *member
				if tt.joinFirst {
					w2 = r.start("w2", p, slow(""))
					settle()
				}
				tt.flood(t, r.st)
				settle()
				// The credits out, and the burst a pump holds while it waits.
				if _, taken := tw.counts(); taken-before > worker.WatchBacklog+watch.MaxBurst {
					t.Fatalf("the pump took %d of %d flood events while %s was stalled; want at most %d", taken-before, flood, tt.stall, worker.WatchBacklog+watch.MaxBurst)
				}
				fenceByIntruder(t, r.st, "a")
				if w2 == nil {
					w2 = r.start("w2", p, slow(""))
					settle()
				}
				gate.open()
				// Whoever holds a at the end claimed it after the intruder's
				// epoch 2: w1 saw the fence.
				r.until("w1 sees the fence and the fleet shares the splits", 20*time.Second, []*member{w1, w2}, func() bool {
					a, ok := w1.held["a"]
					if !ok {
						a, ok = w2.held["a"]
					}
					return ok && a.Epoch > 2 && len(w1.held) == 1 && len(w2.held) == 1
				})
				if opened, _ := tw.counts(); opened < 2 {
					t.Fatalf("%d durable watches opened; the flood should have broken the first", opened)
				}
				for _, m := range []*member{w1, w2} {
					if err := m.c.Depart(); err != nil {
						t.Fatal(err)
					}
				}
			})
		})
	}
}
