package storetest

import (
	"context"
	"sync"
	"time"

	"github.com/spate-go/coordination/store"
)

// relay is a watcher that forwards an inner watch's events through edit,
// which may drop, repeat, change or delay them (emit sends one event). Its
// goroutine ends when the inner watch ends and every event was handed over
// or the relay was stopped.
type relay struct {
	inner store.Watcher
	out   chan store.WatchEvent // unbuffered unless the store under test says otherwise; closed by run
	stop  chan struct{}         // closed by Stop
	once  sync.Once
	err   func() error // nil: the inner watch's Err
}

// newRelay starts forwarding inner's events through edit into a channel of
// capacity buf. edit may call emit any number of times; emit reports false
// once the relay was stopped.
func newRelay(inner store.Watcher, buf int, edit func(ev store.WatchEvent, emit func(store.WatchEvent) bool)) *relay {
	r := &relay{inner: inner, out: make(chan store.WatchEvent, buf), stop: make(chan struct{})}
	go func() {
		defer close(r.out)
		emit := func(ev store.WatchEvent) bool {
			select {
			case r.out <- ev:
				return true
			case <-r.stop:
				return false
			}
		}
		for ev := range inner.Events() {
			edit(ev, emit)
		}
	}()
	return r
}

func (r *relay) Events() <-chan store.WatchEvent { return r.out }

func (r *relay) Err() error {
	if r.err != nil {
		return r.err()
	}
	return r.inner.Err()
}

func (r *relay) Stop() {
	r.once.Do(func() { close(r.stop) })
	r.inner.Stop()
}

// watchEdit is a store whose watches pass through a relay with edit; buf is
// the relay's capacity.
type watchEdit struct {
	store.Store
	buf  int
	edit func() func(ev store.WatchEvent, emit func(store.WatchEvent) bool) // one per watch
}

func (s *watchEdit) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	w, err := s.Store.Watch(ctx, ks, prefix)
	if err != nil {
		return nil, err
	}
	return newRelay(w, s.buf, s.edit()), nil
}

// passThrough forwards every event once.
func passThrough(ev store.WatchEvent, emit func(store.WatchEvent) bool) { emit(ev) }

// duplicating repeats every event of kind (legal: consumers dedupe).
func duplicating(kind store.EventKind) func() func(store.WatchEvent, func(store.WatchEvent) bool) {
	return func() func(store.WatchEvent, func(store.WatchEvent) bool) {
		return func(ev store.WatchEvent, emit func(store.WatchEvent) bool) {
			if emit(ev) && ev.Kind == kind {
				emit(ev)
			}
		}
	}
}

// delayedKeys is a store whose watches deliver the tail events of every
// other key (by the key's last byte) 20ms late, each key still in order
// (legal: order is promised per key only).
type delayedKeys struct{ store.Store }

func (s *delayedKeys) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	inner, err := s.Store.Watch(ctx, ks, prefix)
	if err != nil {
		return nil, err
	}
	const delay = 20 * time.Millisecond
	type late struct {
		ev  store.WatchEvent
		due time.Time
	}
	slow := make(chan late, 1<<16)
	r := &relay{inner: inner, out: make(chan store.WatchEvent), stop: make(chan struct{})}
	emit := func(ev store.WatchEvent) bool {
		select {
		case r.out <- ev:
			return true
		case <-r.stop:
			return false
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(slow)
		snapDone := false
		for ev := range inner.Events() {
			k := ev.Entry.Key
			switch {
			case ev.Kind == store.SnapshotDone:
				snapDone = true
				emit(ev)
			case snapDone && k != "" && k[len(k)-1]%2 == 1:
				slow <- late{ev, time.Now().Add(delay)}
			default:
				emit(ev)
			}
		}
	})
	wg.Go(func() {
		for l := range slow {
			time.Sleep(time.Until(l.due)) // simulated network latency
			emit(l.ev)
		}
	})
	go func() { wg.Wait(); close(r.out) }()
	return r, nil
}

// shortTTL is a store that reports a LeaseTTL other than the one its
// ephemeral keys really live.
type shortTTL struct {
	store.Store
	ttl time.Duration
}

func (s *shortTTL) LeaseTTL() time.Duration { return s.ttl }
