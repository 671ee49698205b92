package main

import (
	"context"
	"sync"
	"time"

	"github.com/spate-go/coordination/store"
)

// countingWatcher forwards a store.Watcher's events to its consumer,
// counts each one it hands over, and keeps the store's live and loaded
// (snapshot delivered) watch counts.
type countingWatcher struct {
	inner store.Watcher
	out   chan store.WatchEvent // unbuffered; closed by forward
	stop  chan struct{}         // closed once by Stop
	once  sync.Once
	done  chan struct{} // closed when forward returns
}

// newCountingWatcher starts the forwarding goroutine; it ends when the inner
// watch ends, when ctx is done or when Stop is called.
func newCountingWatcher(ctx context.Context, w store.Watcher, s *countingStore) *countingWatcher {
	cw := &countingWatcher{
		inner: w,
		out:   make(chan store.WatchEvent),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	go cw.forward(ctx, s)
	return cw
}

// forward copies events until the inner channel closes or the watch is
// abandoned.
func (cw *countingWatcher) forward(ctx context.Context, s *countingStore) {
	defer close(cw.done)
	defer close(cw.out)
	loaded := false
	defer func() {
		s.live.Add(-1)
		if loaded {
			s.loaded.Add(-1)
		}
	}()
	for ev := range cw.inner.Events() {
		// Counted before the hand-over, so a consumer that has received an
		// event always finds it counted; an abandoned last event overcounts
		// by one.
		s.events.Add(1)
		if ev.Kind == store.SnapshotDone && !loaded {
			loaded = true
			s.loaded.Add(1)
			s.loadedAt.Store(time.Now().UnixNano())
		}
		select {
		case cw.out <- ev:
		case <-cw.stop:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Events returns the forwarded events; closed when the watch ends.
func (cw *countingWatcher) Events() <-chan store.WatchEvent { return cw.out }

// Err forwards the inner watch's reason, once Events is closed.
func (cw *countingWatcher) Err() error {
	<-cw.done
	return cw.inner.Err()
}

// Stop ends the inner watch and the forwarding; safe to call more than once.
func (cw *countingWatcher) Stop() {
	cw.once.Do(func() { close(cw.stop) })
	cw.inner.Stop()
}
