package testkit

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// WriteOp names the store write operations a [Match] selects, as a bit set.
type WriteOp int

const (
	// OpCreate is store.Store.Create.
	OpCreate WriteOp = 1 << iota
	// OpUpdate is store.Store.Update.
	OpUpdate
	// OpDelete is store.Store.Delete.
	OpDelete
)

// Match selects the store writes a one-shot fault fires on. The zero Match
// selects every write in the Durable keyspace.
type Match struct {
	// Keyspace is the keyspace the write must target.
	Keyspace store.Keyspace
	// Prefix is a plain string prefix the key must start with; "" matches
	// every key.
	Prefix string
	// Ops is the set of operations that match; zero means Create, Update and
	// Delete.
	Ops WriteOp
	// Value, when non-nil, must return true for the value being written. A
	// Delete carries no value and never matches a Match with a Value.
	Value func(value []byte) bool
}

func (m Match) matches(op WriteOp, ks store.Keyspace, key string, value []byte) bool {
	if ks != m.Keyspace || !strings.HasPrefix(key, m.Prefix) {
		return false
	}
	if m.Ops != 0 && m.Ops&op == 0 {
		return false
	}
	if m.Value != nil {
		return op != OpDelete && m.Value(value)
	}
	return true
}

// OwnerNull is a [Match] value predicate that selects record values whose
// JSON "owner" field is present and null: a hand-back, a fail or a
// quarantine of a progress record.
func OwnerNull() func([]byte) bool {
	return func(b []byte) bool {
		f, ok := jsonFields(b)
		if !ok {
			return false
		}
		raw, present := f["owner"]
		return present && string(raw) == "null"
	}
}

// OwnerIs is a [Match] value predicate that selects values whose JSON
// "owner" field equals instance (progress records and leases).
func OwnerIs(instance string) func([]byte) bool {
	return func(b []byte) bool {
		f, ok := jsonFields(b)
		if !ok {
			return false
		}
		var owner *string
		if json.Unmarshal(f["owner"], &owner) != nil || owner == nil {
			return false
		}
		return *owner == instance
	}
}

func jsonFields(b []byte) (map[string]json.RawMessage, bool) {
	var f map[string]json.RawMessage
	if json.Unmarshal(b, &f) != nil {
		return nil, false
	}
	return f, true
}

type faultKind int

const (
	faultDrop faultKind = iota + 1
	faultMaybeLand
	faultPanic
	faultMaybeLandEvery // persistent: every matching write lands, then reports an error
)

// Fault is one armed fault of a [FaultStore]: one-shot, or persistent
// until [FaultStore.Disarm]. It is safe for concurrent use.
type Fault struct {
	kind  faultKind
	match Match

	mu    sync.Mutex
	fired bool
}

// Fired reports whether the fault has fired (a one-shot fault has then
// disarmed).
func (f *Fault) Fired() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

// FaultStore wraps one member's access to a shared store.Store and injects
// faults into it: one-shot write faults ([FaultStore.DropNextWrite],
// [FaultStore.MaybeLandNextWrite], [FaultStore.PanicNextWrite]), a partition
// ([FaultStore.Partition]), a watch outage ([FaultStore.BlockWatches]), a
// hang ([FaultStore.Hang]) and a store replaced under the member
// ([FaultStore.Replace]). Every other member keeps using the store
// normally. All methods are safe for concurrent use. Injected errors are
// *coordination.Error of kind Retryable. It is a [store.Wrapper] and
// forwards the wrapped store's value cap, so code above it checks values
// against the real cap.
type FaultStore struct {
	mu          sync.Mutex
	inner       store.Store // the wrapped store; swapped by Replace
	faults      []*Fault
	failReads   []Match // Gets that fail (FailReads)
	partitioned bool
	noWatch     bool          // Watch refused while set
	hung        chan struct{} // non-nil while hung; closed by Unhang
	watches     map[*faultWatcher]struct{}
}

var (
	_ store.Store        = (*FaultStore)(nil)
	_ store.Wrapper      = (*FaultStore)(nil)
	_ store.ValueLimiter = (*FaultStore)(nil)
)

// NewFaultStore returns a fault wrapper around inner with no fault armed.
func NewFaultStore(inner store.Store) *FaultStore {
	return &FaultStore{inner: inner, watches: make(map[*faultWatcher]struct{})}
}

// Inner returns the wrapped store.
func (s *FaultStore) Inner() store.Store { return s.target() }

// Unwrap returns the wrapped store (the [store.Wrapper] convention), so
// [store.MaxValueSize] sees through the fault store.
func (s *FaultStore) Unwrap() store.Store { return s.target() }

// target returns the store operations go to.
func (s *FaultStore) target() store.Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner
}

// Replace makes every later operation of this member go to st, as when the
// server behind it restarts on other data (a store directory restored from
// an older copy), and breaks every open watch with Retryable "injected:
// store replaced", so the member re-watches st. Neither store is closed by
// Replace; Close closes the one wrapped then.
func (s *FaultStore) Replace(st store.Store) {
	s.breakWatches(func() { s.inner = st }, &coordination.Error{Kind: coordination.Retryable, Reason: "injected: store replaced"})
}

// MaxValueSize forwards the wrapped store's value cap ([store.ValueLimiter]):
// 0 when it has none. Injected faults never change the cap.
func (s *FaultStore) MaxValueSize() int {
	n, _ := store.MaxValueSize(s.target())
	return n
}

// DropNextWrite arms a fault: the first write matching m returns Retryable
// "injected: write dropped" and writes nothing. Then the fault disarms.
func (s *FaultStore) DropNextWrite(m Match) *Fault { return s.arm(faultDrop, m) }

// MaybeLandNextWrite arms a fault: the first write matching m is applied and
// then returns Retryable "injected: reply lost after the write landed" (the
// caller cannot tell whether it landed). Then the fault disarms.
func (s *FaultStore) MaybeLandNextWrite(m Match) *Fault { return s.arm(faultMaybeLand, m) }

// MaybeLandEveryWrite arms a persistent fault: every write matching m is
// applied and then returns Retryable "injected: reply lost after the write
// landed", until [FaultStore.Disarm] (replies lost, or arriving after the
// caller's timeout, for a while).
func (s *FaultStore) MaybeLandEveryWrite(m Match) *Fault { return s.arm(faultMaybeLandEvery, m) }

// FailReads makes every Get in keyspace ks of a key starting with prefix
// return Retryable "injected: read failed" until [FaultStore.Disarm].
func (s *FaultStore) FailReads(ks store.Keyspace, prefix string) {
	s.mu.Lock()
	s.failReads = append(s.failReads, Match{Keyspace: ks, Prefix: prefix})
	s.mu.Unlock()
}

// PanicNextWrite arms a fault: the first write matching m panics with
// "injected panic" in the caller's goroutine (a bug inside the code under
// test) and writes nothing. Then the fault disarms.
func (s *FaultStore) PanicNextWrite(m Match) *Fault { return s.arm(faultPanic, m) }

func (s *FaultStore) arm(k faultKind, m Match) *Fault {
	f := &Fault{kind: k, match: m}
	s.mu.Lock()
	s.faults = append(s.faults, f)
	s.mu.Unlock()
	return f
}

// Disarm removes every armed fault that has not fired, every persistent
// fault and every read failure.
func (s *FaultStore) Disarm() {
	s.mu.Lock()
	s.faults, s.failReads = nil, nil
	s.mu.Unlock()
}

// Partition cuts this member off the store: until [FaultStore.Heal], every
// operation (reads, writes, watches, listings) returns Retryable "injected:
// partitioned", and every open watch breaks at once with that error.
func (s *FaultStore) Partition() {
	s.breakWatches(func() { s.partitioned = true }, errPartitioned())
}

// breakWatches runs set under the lock and then breaks every watch that was
// open at that moment with err.
func (s *FaultStore) breakWatches(set func(), err error) {
	s.mu.Lock()
	set()
	ws := make([]*faultWatcher, 0, len(s.watches))
	for w := range s.watches {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	for _, w := range ws {
		w.breakWith(err)
	}
}

// Heal ends a partition. Watches broken by it stay broken; the member
// re-establishes them itself.
func (s *FaultStore) Heal() {
	s.mu.Lock()
	s.partitioned = false
	s.mu.Unlock()
}

// Partitioned reports whether the member is partitioned.
func (s *FaultStore) Partitioned() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.partitioned
}

// BlockWatches breaks every open watch of this member with Retryable
// "injected: watch broken" and, until [FaultStore.UnblockWatches], makes
// every Watch call fail with it, while every other operation keeps working:
// a watch outage without a store outage.
func (s *FaultStore) BlockWatches() {
	s.breakWatches(func() { s.noWatch = true }, errWatchBroken())
}

// UnblockWatches lets Watch calls succeed again.
func (s *FaultStore) UnblockWatches() {
	s.mu.Lock()
	s.noWatch = false
	s.mu.Unlock()
}

func errWatchBroken() error {
	return &coordination.Error{Kind: coordination.Retryable, Reason: "injected: watch broken"}
}

// Hang makes the store stop answering this member: until [FaultStore.Unhang],
// every new operation blocks until its context ends and then returns
// Retryable "injected: store hung: <context error>". Open watches keep
// delivering.
func (s *FaultStore) Hang() {
	s.mu.Lock()
	if s.hung == nil {
		s.hung = make(chan struct{})
	}
	s.mu.Unlock()
}

// Unhang ends a hang; operations blocked by it proceed normally.
func (s *FaultStore) Unhang() {
	s.mu.Lock()
	if s.hung != nil {
		close(s.hung)
		s.hung = nil
	}
	s.mu.Unlock()
}

func errPartitioned() error {
	return &coordination.Error{Kind: coordination.Retryable, Reason: "injected: partitioned"}
}

// gate applies the partition and the hang to one operation.
func (s *FaultStore) gate(ctx context.Context) error {
	s.mu.Lock()
	part, hung := s.partitioned, s.hung
	s.mu.Unlock()
	if part {
		return errPartitioned()
	}
	if hung != nil {
		select {
		case <-hung:
		case <-ctx.Done():
			return coordination.Errorf(coordination.Retryable, "injected: store hung: %w", ctx.Err())
		}
		return s.gate(ctx)
	}
	return nil
}

// take returns the first armed fault matching the write and disarms it.
func (s *FaultStore) take(op WriteOp, ks store.Keyspace, key string, value []byte) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.match.matches(op, ks, key, value) {
			if f.kind != faultMaybeLandEvery {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
			f.mu.Lock()
			f.fired = true
			f.mu.Unlock()
			return f
		}
	}
	return nil
}

func errDropped() error {
	return &coordination.Error{Kind: coordination.Retryable, Reason: "injected: write dropped"}
}

func errReplyLost() error {
	return &coordination.Error{Kind: coordination.Retryable, Reason: "injected: reply lost after the write landed"}
}

// LeaseTTL returns the wrapped store's lease TTL.
func (s *FaultStore) LeaseTTL() time.Duration { return s.target().LeaseTTL() }

// write runs one write through the partition, the hang and the first armed
// fault that matches it; do performs the write on the wrapped store.
func (s *FaultStore) write(ctx context.Context, op WriteOp, ks store.Keyspace, key string, value []byte, do func() error) error {
	if err := s.gate(ctx); err != nil {
		return err
	}
	f := s.take(op, ks, key, value)
	switch {
	case f == nil:
		return do()
	case f.kind == faultPanic:
		panic("injected panic")
	case f.kind == faultDrop:
		return errDropped()
	}
	if err := do(); err != nil {
		return err
	}
	return errReplyLost()
}

// Create is store.Store.Create with this member's faults applied.
func (s *FaultStore) Create(ctx context.Context, ks store.Keyspace, key string, value []byte) (store.Revision, bool, error) {
	var rev store.Revision
	var ok bool
	err := s.write(ctx, OpCreate, ks, key, value, func() (err error) {
		rev, ok, err = s.target().Create(ctx, ks, key, value)
		return err
	})
	if err != nil {
		return 0, false, err
	}
	return rev, ok, nil
}

// Update is store.Store.Update with this member's faults applied.
func (s *FaultStore) Update(ctx context.Context, ks store.Keyspace, key string, value []byte, expected store.Revision) (store.Revision, bool, error) {
	var rev store.Revision
	var ok bool
	err := s.write(ctx, OpUpdate, ks, key, value, func() (err error) {
		rev, ok, err = s.target().Update(ctx, ks, key, value, expected)
		return err
	})
	if err != nil {
		return 0, false, err
	}
	return rev, ok, nil
}

// Delete is store.Store.Delete with this member's faults applied.
func (s *FaultStore) Delete(ctx context.Context, ks store.Keyspace, key string, expected store.Revision) (bool, error) {
	var ok bool
	err := s.write(ctx, OpDelete, ks, key, nil, func() (err error) {
		ok, err = s.target().Delete(ctx, ks, key, expected)
		return err
	})
	if err != nil {
		return false, err
	}
	return ok, nil
}

// Get is store.Store.Get, subject to the partition, the hang and
// [FaultStore.FailReads].
func (s *FaultStore) Get(ctx context.Context, ks store.Keyspace, key string) (store.Entry, bool, error) {
	if err := s.gate(ctx); err != nil {
		return store.Entry{}, false, err
	}
	s.mu.Lock()
	fail := false
	for _, m := range s.failReads {
		fail = fail || m.matches(OpUpdate, ks, key, nil)
	}
	s.mu.Unlock()
	if fail {
		return store.Entry{}, false, &coordination.Error{Kind: coordination.Retryable, Reason: "injected: read failed"}
	}
	return s.target().Get(ctx, ks, key)
}

// List is store.Store.List, subject to the partition and the hang.
func (s *FaultStore) List(ctx context.Context, ks store.Keyspace, prefix string) ([]store.Entry, error) {
	if err := s.gate(ctx); err != nil {
		return nil, err
	}
	return s.target().List(ctx, ks, prefix)
}

// Watch is store.Store.Watch, subject to the partition, the hang and
// [FaultStore.BlockWatches]; a partition or a watch block breaks the
// returned watch.
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

// Close closes the wrapped store.
func (s *FaultStore) Close() error { return s.target().Close() }

// faultWatcher forwards an inner watch until it ends, is stopped, or a
// partition breaks it.
type faultWatcher struct {
	inner store.Watcher
	out   chan store.WatchEvent // cap 64; closed by run when the watch ends

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
	for {
		select {
		case ev, ok := <-in:
			if !ok {
				w.err = w.inner.Err()
				return
			}
			select {
			case w.out <- ev:
			case <-w.brk:
				w.end(w.brkErr)
				return
			case <-w.stop:
				w.end(nil)
				return
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
