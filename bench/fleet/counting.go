package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spate-go/coordination/store"
)

// op is a store operation the counting decorator tallies.
type op int

const (
	opCreate op = iota
	opUpdate
	opDelete
	opGet
	opList
	opWatch
	numOps
)

// String names the operation as the figures print it.
func (o op) String() string {
	return [...]string{"create", "update", "delete", "get", "list", "watch"}[o]
}

// write is one finished Create, Update or Delete as the decorator's tap sees
// it: which key, what value size, whether it landed, and when it returned.
type write struct {
	ks    store.Keyspace
	op    op
	key   string
	size  int
	ok    bool
	start time.Time
	end   time.Time
}

// tally is a point-in-time copy of a counter set: calls per keyspace and
// operation, and watch events delivered.
type tally struct {
	calls  [2][numOps]int64
	events int64
}

// writes returns the Create, Update and Delete calls of both keyspaces.
func (t tally) writes() int64 {
	var n int64
	for ks := range t.calls {
		n += t.calls[ks][opCreate] + t.calls[ks][opUpdate] + t.calls[ks][opDelete]
	}
	return n
}

// sub returns t minus an earlier tally u.
func (t tally) sub(u tally) tally {
	for ks := range t.calls {
		for o := range t.calls[ks] {
			t.calls[ks][o] -= u.calls[ks][o]
		}
	}
	t.events -= u.events
	return t
}

// countingStore decorates a store.Store: it counts every call per keyspace
// and operation, counts the events its watches deliver, and hands every
// finished write (with its start and end) to an optional tap. It forwards store.ValueLimiter. Safe for concurrent use.
type countingStore struct {
	inner store.Store

	calls  [2][numOps]atomic.Int64
	events atomic.Int64

	// watches counts the watches opened; live counts those still open and
	// loaded those of them that have delivered their SnapshotDone.
	watches atomic.Int64
	live    atomic.Int64
	loaded  atomic.Int64
	// loadedAt is when the latest first SnapshotDone of a watch arrived
	// (unix nanoseconds; 0 before).
	loadedAt atomic.Int64

	tapMu sync.Mutex
	tap   func(write) // nil when no figure listens
}

var (
	_ store.Store        = (*countingStore)(nil)
	_ store.ValueLimiter = (*countingStore)(nil)
)

// newCounting wraps st.
func newCounting(st store.Store) *countingStore { return &countingStore{inner: st} }

// snapshot copies the counters.
func (s *countingStore) snapshot() tally {
	var t tally
	for ks := range s.calls {
		for o := range s.calls[ks] {
			t.calls[ks][o] = s.calls[ks][o].Load()
		}
	}
	t.events = s.events.Load()
	return t
}

// setTap installs f (nil removes it). f runs on the calling goroutine of
// every write after it returns, so it must be quick and safe for concurrent
// use.
func (s *countingStore) setTap(f func(write)) {
	s.tapMu.Lock()
	s.tap = f
	s.tapMu.Unlock()
}

// done counts a finished write and hands it to the tap.
func (s *countingStore) done(w write) {
	w.end = time.Now()
	s.tapMu.Lock()
	f := s.tap
	s.tapMu.Unlock()
	if f != nil {
		f(w)
	}
}

// begin counts a write starting.
func (s *countingStore) begin(ks store.Keyspace, o op) time.Time {
	s.calls[ks][o].Add(1)
	return time.Now()
}

// LeaseTTL forwards to the wrapped store.
func (s *countingStore) LeaseTTL() time.Duration { return s.inner.LeaseTTL() }

// MaxValueSize forwards the wrapped store's cap; 0 (no cap) if it has none.
func (s *countingStore) MaxValueSize() int {
	if l, ok := s.inner.(store.ValueLimiter); ok {
		return l.MaxValueSize()
	}
	return 0
}

// Create counts and forwards.
func (s *countingStore) Create(ctx context.Context, ks store.Keyspace, key string, value []byte) (store.Revision, bool, error) {
	t := s.begin(ks, opCreate)
	rev, ok, err := s.inner.Create(ctx, ks, key, value)
	s.done(write{ks: ks, op: opCreate, key: key, size: len(value), ok: ok, start: t})
	return rev, ok, err
}

// Update counts and forwards.
func (s *countingStore) Update(ctx context.Context, ks store.Keyspace, key string, value []byte, expected store.Revision) (store.Revision, bool, error) {
	t := s.begin(ks, opUpdate)
	rev, ok, err := s.inner.Update(ctx, ks, key, value, expected)
	s.done(write{ks: ks, op: opUpdate, key: key, size: len(value), ok: ok, start: t})
	return rev, ok, err
}

// Delete counts and forwards.
func (s *countingStore) Delete(ctx context.Context, ks store.Keyspace, key string, expected store.Revision) (bool, error) {
	t := s.begin(ks, opDelete)
	ok, err := s.inner.Delete(ctx, ks, key, expected)
	s.done(write{ks: ks, op: opDelete, key: key, ok: ok, start: t})
	return ok, err
}

// Get counts and forwards.
func (s *countingStore) Get(ctx context.Context, ks store.Keyspace, key string) (store.Entry, bool, error) {
	s.calls[ks][opGet].Add(1)
	return s.inner.Get(ctx, ks, key)
}

// List counts and forwards.
func (s *countingStore) List(ctx context.Context, ks store.Keyspace, prefix string) ([]store.Entry, error) {
	s.calls[ks][opList].Add(1)
	return s.inner.List(ctx, ks, prefix)
}

// Watch counts and forwards; the returned watcher counts the events its
// consumer receives.
func (s *countingStore) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	s.calls[ks][opWatch].Add(1)
	w, err := s.inner.Watch(ctx, ks, prefix)
	if err != nil {
		return nil, err
	}
	s.watches.Add(1)
	s.live.Add(1)
	return newCountingWatcher(ctx, w, s), nil
}

// Close forwards to the wrapped store.
func (s *countingStore) Close() error { return s.inner.Close() }
