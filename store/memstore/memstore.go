package memstore

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// Store is an in-memory [store.Store] with two keyspaces, per-keyspace
// revision counters and TTL expiry judged on a [clock.Clock]. It also
// implements [store.ValueLimiter]. Create it with [New]; the zero value is not
// usable. All methods are safe for concurrent use.
type Store struct {
	ttl      time.Duration // fixed at construction
	clock    clock.Clock   // judges expiry and runs the expiry timer
	maxValue int           // value cap in bytes; 0 means none
	// exactTimers is true for a hand-advanced clock such as *clock.Mock,
	// whose time can jump while the expiry timer is being armed (see
	// rearmLocked).
	exactTimers bool

	mu       sync.Mutex // guards everything below
	closed   bool
	spaces   [2]keyspace           // indexed by spaceIndex
	watchers map[*watcher]struct{} // running watches, both keyspaces
	expiries expiryHeap            // deadlines of ephemeral writes, earliest first
	timer    *clock.Timer          // fires sweep at timerAt; nil when disarmed
	timerAt  time.Time             // deadline timer is armed for
	timerGen uint64                // identifies the armed timer to its callback
}

// keyspace is one keyspace's entries and its revision counter.
type keyspace struct {
	rev     store.Revision    // last revision drawn; the next write takes rev+1
	entries map[string]*entry // live entries only
}

// entry is one live key. Its value is never handed out without copying.
type entry struct {
	value []byte
	rev   store.Revision
}

// New returns an empty store whose ephemeral entries live leaseTTL after their
// last write. leaseTTL should be positive: with leaseTTL <= 0 every ephemeral
// entry is expired as soon as it is written. By default expiry is judged on
// the real clock and values are not capped; see [WithClock] and
// [WithMaxValueSize].
//
// New starts no goroutine: expiry runs on clock timers (see the package
// documentation). Call [Store.Close] to stop its timer and end its watches.
func New(leaseTTL time.Duration, opts ...Option) *Store {
	s := &Store{
		ttl:      leaseTTL,
		clock:    clock.New(),
		watchers: make(map[*watcher]struct{}),
	}
	for i := range s.spaces {
		s.spaces[i].entries = make(map[string]*entry)
	}
	for _, o := range opts {
		o(s)
	}
	_, s.exactTimers = s.clock.(interface{ Add(time.Duration) })
	return s
}

// LeaseTTL returns the lease TTL given to [New].
func (s *Store) LeaseTTL() time.Duration { return s.ttl }

// MaxValueSize returns the value cap set by [WithMaxValueSize] in bytes, or 0
// when values are not capped.
func (s *Store) MaxValueSize() int { return s.maxValue }

// Create writes key with value iff key is absent (never written, deleted or
// expired) and returns its new revision. A live key is (0, false, nil). It
// fails only with Retryable for a done ctx, Fatal for a value above the cap,
// and Fatal "store is closed".
func (s *Store) Create(ctx context.Context, ks store.Keyspace, key string, value []byte) (store.Revision, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now, err := s.beginLocked(ctx, "create", ks, key)
	if err != nil {
		return 0, false, err
	}
	if err := s.checkSize(key, value); err != nil {
		return 0, false, err
	}
	if _, live := s.space(ks).entries[key]; live {
		return 0, false, nil
	}
	return s.putLocked(now, ks, key, value), true, nil
}

// Update writes key with value iff key is live at revision expected and
// returns its new revision; otherwise it is (0, false, nil). On
// [store.Ephemeral] a successful update re-arms the TTL. Errors are as for
// [Store.Create].
func (s *Store) Update(ctx context.Context, ks store.Keyspace, key string, value []byte, expected store.Revision) (store.Revision, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now, err := s.beginLocked(ctx, "update", ks, key)
	if err != nil {
		return 0, false, err
	}
	if err := s.checkSize(key, value); err != nil {
		return 0, false, err
	}
	e, live := s.space(ks).entries[key]
	if !live || e.rev != expected {
		return 0, false, nil
	}
	return s.putLocked(now, ks, key, value), true, nil
}

// Get returns a copy of key's live entry, or (Entry{}, false, nil) when key is
// absent or expired. It fails only with Retryable for a done ctx and Fatal
// "store is closed".
func (s *Store) Get(ctx context.Context, ks store.Keyspace, key string) (store.Entry, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.beginLocked(ctx, "get", ks, key); err != nil {
		return store.Entry{}, false, err
	}
	e, live := s.space(ks).entries[key]
	if !live {
		return store.Entry{}, false, nil
	}
	return store.Entry{Key: key, Value: clone(e.value), Revision: e.rev}, true, nil
}

// Delete removes key and publishes a Delete carrying the deletion's own
// revision. expected 0 deletes unconditionally; a live key at a revision other
// than a non-zero expected is not deleted (false). An absent key always
// returns true and publishes nothing. It fails only with Retryable for a done
// ctx and Fatal "store is closed".
func (s *Store) Delete(ctx context.Context, ks store.Keyspace, key string, expected store.Revision) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.beginLocked(ctx, "delete", ks, key); err != nil {
		return false, err
	}
	e, live := s.space(ks).entries[key]
	if !live {
		return true, nil
	}
	if expected != 0 && e.rev != expected {
		return false, nil
	}
	s.deleteLocked(ks, key)
	return true, nil
}

// List returns a copy of every live entry whose key starts with prefix,
// sorted by key (callers must not rely on the order: the contract promises
// none). It fails only with Retryable for a done ctx and Fatal "store is
// closed".
func (s *Store) List(ctx context.Context, ks store.Keyspace, prefix string) ([]store.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.beginLocked(ctx, "list", ks, prefix); err != nil {
		return nil, err
	}
	return s.listLocked(ks, prefix), nil
}

// Close ends every watch (their Err is nil), stops the expiry timer and makes
// every later operation return Fatal "store is closed". It always returns nil
// and may be called more than once.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.disarmLocked()
	for w := range s.watchers {
		w.endLocked(nil)
	}
	for i := range s.spaces {
		s.spaces[i].entries = nil
	}
	s.expiries = nil
	return nil
}

// beginLocked starts an operation: it rejects a closed store and a done ctx,
// then expires every entry whose deadline has passed. It returns the clock's
// current time.
func (s *Store) beginLocked(ctx context.Context, op string, ks store.Keyspace, key string) (time.Time, error) {
	if s.closed {
		return time.Time{}, coordination.Errorf(coordination.Fatal, "store is closed")
	}
	if err := ctx.Err(); err != nil {
		return time.Time{}, coordination.Errorf(coordination.Retryable, "%s %s %q: %w", op, ks, key, err)
	}
	now := s.clock.Now()
	s.expireLocked(now)
	return now, nil
}

// checkSize enforces the value cap (store.ValueLimiter).
func (s *Store) checkSize(key string, value []byte) error {
	if s.maxValue > 0 && len(value) > s.maxValue {
		return coordination.Errorf(coordination.Fatal,
			"value for %s is %d bytes, above this store's cap of %d bytes", key, len(value), s.maxValue)
	}
	return nil
}

// putLocked writes key at the keyspace's next revision, arms its expiry on
// Ephemeral, and publishes the Put to every matching watcher.
func (s *Store) putLocked(now time.Time, ks store.Keyspace, key string, value []byte) store.Revision {
	sp := s.space(ks)
	sp.rev++
	e := &entry{value: clone(value), rev: sp.rev}
	sp.entries[key] = e
	if ks == store.Ephemeral {
		s.pushExpiryLocked(now, expiry{deadline: now.Add(s.ttl), key: key, rev: e.rev})
	}
	s.publishLocked(ks, store.WatchEvent{Kind: store.Put, Entry: store.Entry{Key: key, Value: e.value, Revision: e.rev}})
	return e.rev
}

// deleteLocked removes the live key at the keyspace's next revision and
// publishes the Delete carrying that revision.
func (s *Store) deleteLocked(ks store.Keyspace, key string) {
	sp := s.space(ks)
	sp.rev++
	delete(sp.entries, key)
	s.publishLocked(ks, store.WatchEvent{Kind: store.Delete, Entry: store.Entry{Key: key, Revision: sp.rev}})
}

// listLocked returns copies of the live entries under prefix, sorted by key.
func (s *Store) listLocked(ks store.Keyspace, prefix string) []store.Entry {
	var out []store.Entry
	for k, e := range s.space(ks).entries {
		if strings.HasPrefix(k, prefix) {
			out = append(out, store.Entry{Key: k, Value: clone(e.value), Revision: e.rev})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// space returns ks's keyspace. Any value other than store.Ephemeral is the
// durable keyspace, as [store.Keyspace.String] reports it.
func (s *Store) space(ks store.Keyspace) *keyspace {
	if ks == store.Ephemeral {
		return &s.spaces[1]
	}
	return &s.spaces[0]
}

// clone copies b so that neither the caller nor the store can see the other's
// later changes. The copy of an empty or nil value is a non-nil empty slice.
func clone(b []byte) []byte { return append([]byte{}, b...) }

// Compile-time checks of the interfaces Store implements.
var (
	_ store.Store        = (*Store)(nil)
	_ store.ValueLimiter = (*Store)(nil)
)
