package testkit

import (
	"context"
	"encoding/json"
	"slices"
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
	faultLate           // the write lands only after the caller's context ended
	faultLateEvery      // persistent faultLate
	faultFailReads      // persistent: matching reads fail
	faultDropEvery      // persistent faultDrop
)

// persistent reports whether the fault stays armed after firing.
func (k faultKind) persistent() bool {
	return k == faultMaybeLandEvery || k == faultLateEvery || k == faultFailReads || k == faultDropEvery
}

// Fault is one armed fault of a [FaultStore]: one-shot, or persistent
// until [FaultStore.Remove] or [FaultStore.Disarm]. It is safe for
// concurrent use.
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
	failReads   []*Fault // reads that fail (FailReads)
	partitioned bool
	noWatch     bool          // Watch refused while set
	hung        chan struct{} // non-nil while hung; closed by Unhang
	watches     map[*faultWatcher]struct{}
	duplicate   bool // live watch events are delivered twice (DuplicateWatchEvents)
	stale       bool // live watch events are followed by a stale echo (StaleWatchEvents)
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

// DropEveryWrite arms the persistent form of [FaultStore.DropNextWrite]:
// every write matching m returns Retryable "injected: write dropped" without
// being applied, until [FaultStore.Remove] or [FaultStore.Disarm] (a member
// whose writes of some keys stop landing while the rest of the store works).
func (s *FaultStore) DropEveryWrite(m Match) *Fault { return s.arm(faultDropEvery, m) }

// MaybeLandNextWrite arms a fault: the first write matching m is applied and
// then returns Retryable "injected: reply lost after the write landed" (the
// caller cannot tell whether it landed). Then the fault disarms.
func (s *FaultStore) MaybeLandNextWrite(m Match) *Fault { return s.arm(faultMaybeLand, m) }

// MaybeLandEveryWrite arms a persistent fault: every write matching m is
// applied and then returns Retryable "injected: reply lost after the write
// landed", until [FaultStore.Disarm] (replies lost, or arriving after the
// caller's timeout, for a while).
func (s *FaultStore) MaybeLandEveryWrite(m Match) *Fault { return s.arm(faultMaybeLandEvery, m) }

// LandLateNextWrite arms a fault: the first write matching m waits until the
// caller's context ends (its timeout), then lands and returns Retryable
// "injected: write landed after the caller's timeout" wrapping the
// context's error: the caller gave up on a write that lands anyway. A
// context with no deadline lands at once. Then the fault disarms.
func (s *FaultStore) LandLateNextWrite(m Match) *Fault { return s.arm(faultLate, m) }

// LandLateEveryWrite arms the persistent form of [FaultStore.LandLateNextWrite]:
// every write matching m lands after its caller's timeout, until
// [FaultStore.Remove] or [FaultStore.Disarm] (a store slower than the
// caller's timeout).
func (s *FaultStore) LandLateEveryWrite(m Match) *Fault { return s.arm(faultLateEvery, m) }

// FailReads makes reads in keyspace ks fail with Retryable "injected: read
// failed" while writes keep working, until [FaultStore.Remove] of the
// returned fault or [FaultStore.Disarm]: every Get of a key starting with
// prefix, and every List whose prefix and this one overlap (one starts with
// the other).
func (s *FaultStore) FailReads(ks store.Keyspace, prefix string) *Fault {
	f := &Fault{kind: faultFailReads, match: Match{Keyspace: ks, Prefix: prefix}}
	s.mu.Lock()
	s.failReads = append(s.failReads, f)
	s.mu.Unlock()
	return f
}

// readFails reports whether a read of key (a Get) or of prefix (a List,
// list set) in ks fails, marking the failing fault fired.
func (s *FaultStore) readFails(ks store.Keyspace, key string, list bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.failReads {
		p := f.match.Prefix
		if ks != f.match.Keyspace || !(strings.HasPrefix(key, p) || (list && strings.HasPrefix(p, key))) {
			continue
		}
		f.mu.Lock()
		f.fired = true
		f.mu.Unlock()
		return true
	}
	return false
}

func errReadFailed() error {
	return &coordination.Error{Kind: coordination.Retryable, Reason: "injected: read failed"}
}

// Remove disarms f, a fault of this store (one that has not fired yet, a
// persistent one, or a read failure); other faults stay armed.
func (s *FaultStore) Remove(f *Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	drop := func(fs []*Fault) []*Fault {
		return slices.DeleteFunc(fs, func(g *Fault) bool { return g == f })
	}
	s.faults, s.failReads = drop(s.faults), drop(s.failReads)
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
// fault and every read failure, and ends duplicated and stale watch events.
func (s *FaultStore) Disarm() {
	s.mu.Lock()
	s.faults, s.failReads = nil, nil
	s.duplicate, s.stale = false, false
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
			if !f.kind.persistent() {
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
func (s *FaultStore) write(ctx context.Context, op WriteOp, ks store.Keyspace, key string, value []byte, do func(context.Context) error) error {
	if err := s.gate(ctx); err != nil {
		return err
	}
	f := s.take(op, ks, key, value)
	switch {
	case f == nil:
		return do(ctx)
	case f.kind == faultPanic:
		panic("injected panic")
	case f.kind == faultDrop || f.kind == faultDropEvery:
		return errDropped()
	case f.kind == faultLate || f.kind == faultLateEvery:
		return s.landLate(ctx, do)
	}
	if err := do(ctx); err != nil {
		return err
	}
	return errReplyLost()
}

// landLate waits for ctx's deadline, then performs the write and reports it
// as timed out; without a deadline it lands at once.
func (s *FaultStore) landLate(ctx context.Context, do func(context.Context) error) error {
	if _, ok := ctx.Deadline(); ok {
		<-ctx.Done()
	}
	if err := do(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	return &coordination.Error{Kind: coordination.Retryable, Reason: "injected: write landed after the caller's timeout", Err: ctx.Err()}
}

// Create is store.Store.Create with this member's faults applied.
func (s *FaultStore) Create(ctx context.Context, ks store.Keyspace, key string, value []byte) (store.Revision, bool, error) {
	var rev store.Revision
	var ok bool
	err := s.write(ctx, OpCreate, ks, key, value, func(ctx context.Context) (err error) {
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
	err := s.write(ctx, OpUpdate, ks, key, value, func(ctx context.Context) (err error) {
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
	err := s.write(ctx, OpDelete, ks, key, nil, func(ctx context.Context) (err error) {
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
	if s.readFails(ks, key, false) {
		return store.Entry{}, false, errReadFailed()
	}
	return s.target().Get(ctx, ks, key)
}

// List is store.Store.List, subject to the partition, the hang and
// [FaultStore.FailReads].
func (s *FaultStore) List(ctx context.Context, ks store.Keyspace, prefix string) ([]store.Entry, error) {
	if err := s.gate(ctx); err != nil {
		return nil, err
	}
	if s.readFails(ks, prefix, true) {
		return nil, errReadFailed()
	}
	return s.target().List(ctx, ks, prefix)
}

// Close closes the wrapped store.
func (s *FaultStore) Close() error { return s.target().Close() }
