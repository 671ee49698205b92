package testkit

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// The watch faults of a [FaultStore]: outages (BlockWatches, a partition),
// watches that go silent, and duplicated or stale live events.

// Watch is store.Store.Watch, subject to the partition, the hang and
// [FaultStore.BlockWatches]; a partition or a watch block breaks the
// returned watch, [FaultStore.SilenceWatches] silences it, and
// [FaultStore.DuplicateWatchEvents] and [FaultStore.StaleWatchEvents] change
// what it delivers after its snapshot.
func (s *FaultStore) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	if err := s.gate(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	refused := s.noWatch
	s.mu.Unlock()
	if refused {
		return nil, errWatchBroken()
	}
	inner, err := s.target().Watch(ctx, ks, prefix)
	if err != nil {
		return nil, err
	}
	w := &faultWatcher{
		s:     s,
		inner: inner,
		out:   make(chan store.WatchEvent, 64),
		brk:   make(chan struct{}),
		stop:  make(chan struct{}),
	}
	// A Partition or BlockWatches made while the inner watch was opening
	// found no watch to break: break it now.
	s.mu.Lock()
	s.watches[w] = struct{}{}
	part, blocked := s.partitioned, s.noWatch
	s.mu.Unlock()
	go func() {
		w.run()
		s.mu.Lock()
		delete(s.watches, w)
		s.mu.Unlock()
	}()
	switch {
	case part:
		w.breakWith(errPartitioned())
	case blocked:
		w.breakWith(errWatchBroken())
	}
	return w, nil
}

// SilenceWatches makes every watch of this member that is open now stop
// delivering, silently: it neither breaks nor closes, and every later event
// is discarded, until it is stopped. Watches opened afterwards deliver
// normally. (A server-side consumer that stalls looks like this.)
func (s *FaultStore) SilenceWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watches {
		w.silent.Store(true)
	}
}

// DuplicateWatchEvents makes every watch of this member, open or opened
// later, deliver each live event (after its snapshot) twice, until
// [FaultStore.Disarm]. The store contract allows repeats.
func (s *FaultStore) DuplicateWatchEvents() {
	s.mu.Lock()
	s.duplicate = true
	s.mu.Unlock()
}

// StaleWatchEvents makes every watch of this member, open or opened later,
// follow each live event of a key (after its snapshot) with a stale echo:
// the event it delivered before for that key, at its older revision, until
// [FaultStore.Disarm].
func (s *FaultStore) StaleWatchEvents() {
	s.mu.Lock()
	s.stale = true
	s.mu.Unlock()
}

func errWatchBroken() error {
	return &coordination.Error{Kind: coordination.Retryable, Reason: "injected: watch broken"}
}

// faultWatcher forwards an inner watch until it ends, is stopped, or a
// partition breaks it.
type faultWatcher struct {
	s      *FaultStore
	inner  store.Watcher
	out    chan store.WatchEvent // cap 64; closed by run when the watch ends
	silent atomic.Bool           // discard every event (SilenceWatches)

	once    sync.Once
	brk     chan struct{} // closed by breakWith
	brkErr  error         // set before brk is closed
	stopped sync.Once
	stop    chan struct{} // closed by Stop

	err error // written by run before out is closed
}

func (w *faultWatcher) breakWith(err error) {
	w.once.Do(func() {
		w.brkErr = err
		close(w.brk)
	})
}

func (w *faultWatcher) run() {
	defer close(w.out)
	in := w.inner.Events()
	live := false                         // the snapshot was delivered
	last := map[string]store.WatchEvent{} // last live event per key, for stale echoes
	for {
		select {
		case ev, ok := <-in:
			if !ok {
				w.err = w.inner.Err()
				return
			}
			for _, e := range w.deliveries(ev, &live, last) {
				select {
				case w.out <- e:
				case <-w.brk:
					w.end(w.brkErr)
					return
				case <-w.stop:
					w.end(nil)
					return
				}
			}
		case <-w.brk:
			w.end(w.brkErr)
			return
		case <-w.stop:
			w.end(nil)
			return
		}
	}
}

// deliveries returns what the watch delivers for ev: nothing when silenced,
// else ev, repeated or followed by a stale echo per the store's faults.
func (w *faultWatcher) deliveries(ev store.WatchEvent, live *bool, last map[string]store.WatchEvent) []store.WatchEvent {
	if w.silent.Load() {
		return nil
	}
	if ev.Kind == store.SnapshotDone {
		*live = true
		return []store.WatchEvent{ev}
	}
	if !*live {
		return []store.WatchEvent{ev}
	}
	w.s.mu.Lock()
	dup, stale := w.s.duplicate, w.s.stale
	w.s.mu.Unlock()
	out := []store.WatchEvent{ev}
	if dup {
		out = append(out, ev)
	}
	if prev, ok := last[ev.Entry.Key]; ok && stale {
		out = append(out, prev)
	}
	last[ev.Entry.Key] = ev
	return out
}

// end stops the inner watch because this one was broken (err) or stopped
// (nil).
func (w *faultWatcher) end(err error) {
	w.inner.Stop()
	w.err = err
}

// Events returns the forwarded events; it is closed when the watch ends.
func (w *faultWatcher) Events() <-chan store.WatchEvent { return w.out }

// Err says why the watch ended, once Events is closed.
func (w *faultWatcher) Err() error { return w.err }

// Stop ends the watch; it may be called more than once.
func (w *faultWatcher) Stop() { w.stopped.Do(func() { close(w.stop) }) }
