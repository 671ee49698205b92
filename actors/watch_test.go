package actors

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
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
		w := r.startOn(ds, "w1", finalPlan("a"))
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
		w := r.startOn(bs, "w1", finalPlan("a"))
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
