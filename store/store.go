// Package store is the key-value contract the coordination protocol needs: two
// keyspaces (Durable and Ephemeral), create-if-absent, compare-and-swap by
// revision, guarded delete, prefix watches and listings.
//
// # Usage
//
//	st := memstore.New(30 * time.Second)
//	rev, ok, err := st.Create(ctx, store.Durable, "plan", value)
//	_, ok, err = st.Update(ctx, store.Durable, "plan", newValue, rev)
//	w, err := st.Watch(ctx, store.Durable, "")
//	for ev := range w.Events() { ... }
//
// # Guarantees
//
// A lost precondition is (ok=false, err=nil), never an error. Errors are
// *coordination.Error of kind Retryable or Fatal. Revisions strictly increase
// per key across its whole history, deletions included; revisions of the two
// keyspaces are never compared. Every method is safe for concurrent use and
// honours its context: a cancelled or expired context yields Retryable.
//
// # Non-guarantees
//
// Watches may deliver duplicates (consumers dedupe by revision) and promise
// order only per key: events of different keys may arrive in any order
// relative to each other. List is a point-in-time listing in no particular
// order. Package storetest checks any implementation against this contract.
//
// # Value ownership
//
// A value passed to Create or Update belongs to the caller again once the
// call returns: the store copies whatever it keeps, so the caller may reuse
// or change the slice at once (the caller must not change it during the
// call). A value the store hands out (an [Entry] from Get or List, a
// [WatchEvent]) belongs to its receiver: the store never changes it later,
// and the receiver may change it without affecting the store or any other
// receiver. An empty value may come back as nil or as an empty slice.
package store

import (
	"context"
	"time"
)

// Keyspace selects one of a store's two independent keyspaces.
type Keyspace int

const (
	// Durable entries never expire.
	Durable Keyspace = iota
	// Ephemeral entries expire LeaseTTL after their last winning write
	// (Create or Update); every winning write re-arms the TTL, a losing one
	// does not, and expiry reaches watchers as a Delete.
	Ephemeral
)

// String returns "durable" or "ephemeral".
func (ks Keyspace) String() string {
	if ks == Ephemeral {
		return "ephemeral"
	}
	return "durable"
}

// Revision orders the versions of a key. It strictly increases per key across
// the key's whole history; 0 is never a real revision.
type Revision uint64

// Entry is one live key with its value and revision. An Entry returned by a
// store is the receiver's own: its Value is never changed by the store later
// (see "Value ownership" in the package documentation).
type Entry struct {
	Key      string
	Value    []byte
	Revision Revision
}

// EventKind classifies a [WatchEvent].
type EventKind int

const (
	// Put is a live key's value: from the snapshot or a later write.
	Put EventKind = iota + 1
	// Delete is an explicit delete or an ephemeral expiry (not distinguished).
	Delete
	// SnapshotDone marks the end of the initial snapshot.
	SnapshotDone
)

// String returns "put", "delete" or "snapshot-done".
func (k EventKind) String() string {
	switch k {
	case Put:
		return "put"
	case Delete:
		return "delete"
	case SnapshotDone:
		return "snapshot-done"
	}
	return "unknown"
}

// WatchEvent is one event of a [Watcher].
type WatchEvent struct {
	Kind EventKind
	// Entry holds the key, value and revision of a Put; the key and the
	// deletion's own revision for a Delete; nothing for SnapshotDone.
	Entry Entry
}

// Store is what the protocol needs from a key-value store. A lost
// precondition is (ok=false, err=nil), never an error; errors are
// *coordination.Error of kind Retryable or Fatal.
type Store interface {
	// LeaseTTL is how long an Ephemeral entry lives after its last write.
	// It is fixed at construction.
	LeaseTTL() time.Duration
	// Create writes key iff it is absent (never written, deleted or expired).
	// The store does not keep value itself: it copies what it stores.
	Create(ctx context.Context, ks Keyspace, key string, value []byte) (rev Revision, ok bool, err error)
	// Update writes key iff it is live at revision expected. On Ephemeral it
	// re-arms the TTL; a losing Update (like a losing Create or guarded
	// Delete) changes nothing, the TTL included. The store copies value.
	Update(ctx context.Context, ks Keyspace, key string, value []byte, expected Revision) (rev Revision, ok bool, err error)
	// Get returns the live entry of key, or ok=false.
	Get(ctx context.Context, ks Keyspace, key string) (Entry, bool, error)
	// Delete removes key. expected 0 deletes unconditionally; otherwise a
	// live key at another revision loses. An absent key always wins.
	Delete(ctx context.Context, ks Keyspace, key string, expected Revision) (ok bool, err error)
	// Watch delivers every live key under prefix as Put, then exactly one
	// SnapshotDone, then live Put and Delete events with no gap. Prefix
	// matching is plain string prefix. Events may repeat, and are ordered
	// per key only. A watch whose consumer falls behind may break with
	// Retryable, but never drops an event silently.
	Watch(ctx context.Context, ks Keyspace, prefix string) (Watcher, error)
	// List returns every live key under prefix, in no particular order. It
	// never omits a key that was live for the whole call.
	List(ctx context.Context, ks Keyspace, prefix string) ([]Entry, error)
	// Close ends every watch (their Err is nil) and makes later operations
	// return Fatal "store is closed".
	Close() error
}

// Watcher is one running watch.
type Watcher interface {
	// Events delivers the watch's events. It is closed when the watch ends
	// (its context is done, Stop is called, or it breaks).
	Events() <-chan WatchEvent
	// Err says why the watch ended, once Events is closed: nil if it was
	// stopped or its context ended, else a Retryable error saying why it broke.
	Err() error
	// Stop ends the watch. It may be called more than once.
	Stop()
}

// ValueLimiter is implemented by a store that caps value size. A Create or
// Update with a larger value returns Fatal "value for <key> is N bytes, above
// this store's cap of M bytes" and writes nothing. Read the cap with
// [MaxValueSize], which also sees through decorators.
type ValueLimiter interface {
	// MaxValueSize is the cap in bytes; 0 means no cap.
	MaxValueSize() int
}

// Wrapper is implemented by a store decorator (a fault injector, a metrics
// or tracing layer) that forwards to another store. It keeps the inner
// store's optional capabilities, such as [ValueLimiter], visible to
// [MaxValueSize] without the decorator having to forward each one.
type Wrapper interface {
	// Unwrap returns the store this one forwards to.
	Unwrap() Store
}

// maxUnwrapDepth bounds the decorator chain MaxValueSize follows, so a
// decorator that unwraps to itself cannot loop forever.
const maxUnwrapDepth = 64

// MaxValueSize returns the value cap of st: the cap of the first store in
// its decorator chain (st, then st.Unwrap(), ...) that implements
// [ValueLimiter], and true; or 0 and false when none does or that store
// reports 0 (no cap). A decorator that caps values itself implements
// ValueLimiter and is asked first. nil means no cap.
func MaxValueSize(st Store) (int, bool) {
	for range maxUnwrapDepth {
		if st == nil {
			return 0, false
		}
		if vl, ok := st.(ValueLimiter); ok {
			n := vl.MaxValueSize()
			return n, n > 0
		}
		w, ok := st.(Wrapper)
		if !ok {
			return 0, false
		}
		st = w.Unwrap()
	}
	return 0, false
}

// RollbackAdvisor is implemented by a store that can say how it may lose
// writes it acknowledged (a rollback: a key read below a revision already
// seen, docs/protocol.md "Store rollback") and what prevents it. The
// library puts the advice in its rollback error; read it with
// [RollbackAdvice], which also sees through decorators.
type RollbackAdvisor interface {
	// RollbackAdvice names, in a few clauses, how this store loses
	// acknowledged writes and the fix, for example "a NATS server
	// restarted from an older store directory ...: set sync_interval:
	// always on every NATS server".
	RollbackAdvice() string
}

// genericRollbackAdvice is the advice of a store that gives none.
const genericRollbackAdvice = "the store was restored from an older copy or lost writes it had acknowledged: make the store durable"

// RollbackAdvice returns the advice of the first store in st's decorator
// chain that implements [RollbackAdvisor], or a generic one.
func RollbackAdvice(st Store) string {
	for range maxUnwrapDepth {
		if st == nil {
			break
		}
		if ra, ok := st.(RollbackAdvisor); ok {
			if a := ra.RollbackAdvice(); a != "" {
				return a
			}
			break
		}
		w, ok := st.(Wrapper)
		if !ok {
			break
		}
		st = w.Unwrap()
	}
	return genericRollbackAdvice
}
