package storetest

import (
	"context"
	"sync"
	"time"

	"github.com/spate-go/coordination/store"
)

// lazyTTL is a store that keeps expiry itself, as many custom backends do:
// its ephemeral keys live in an inner store that never expires them, reads
// hide a key whose deadline passed, and a sweeper deletes such keys every
// sweep (guarded by their revision, so the Delete reaches watchers). Without
// bugs it is a correct store; each bug is one way such a design goes wrong.
type lazyTTL struct {
	inner store.Store
	ttl   time.Duration
	sweep time.Duration
	bugs  lazyBugs

	mu     sync.Mutex
	leases map[string]lease // ephemeral keys by name

	stop chan struct{}  // closed by Close
	done sync.WaitGroup // the sweeper
	once sync.Once
}

// lazyBugs are the bugs a lazyTTL may have.
type lazyBugs struct {
	rearmOnLostCreate bool // a losing Create re-arms the TTL
	rearmOnLostUpdate bool // a losing Update re-arms the TTL
	rearmOnLostDelete bool // a losing guarded Delete re-arms the TTL
	staleSnapshot     bool // Watch does not sweep first
	noRearmOnUpdate   bool // a winning Update keeps the Create's deadline
}

// lease is the deadline of one ephemeral key's revision.
type lease struct {
	at  time.Time
	rev store.Revision
}

func newLazyTTL(inner store.Store, ttl, sweep time.Duration, bugs lazyBugs) *lazyTTL {
	s := &lazyTTL{inner: inner, ttl: ttl, sweep: sweep, bugs: bugs, leases: map[string]lease{}, stop: make(chan struct{})}
	s.done.Go(func() {
		tick := time.NewTicker(sweep)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				s.reapAll(context.Background())
			}
		}
	})
	return s
}

func (s *lazyTTL) LeaseTTL() time.Duration { return s.ttl }

// expired reports whether key's lease has passed.
func (s *lazyTTL) expired(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.leases[key]
	return ok && time.Now().After(l.at)
}

// reap deletes key if its lease has passed.
func (s *lazyTTL) reap(ctx context.Context, key string) error {
	s.mu.Lock()
	l, ok := s.leases[key]
	due := ok && time.Now().After(l.at)
	s.mu.Unlock()
	if !due {
		return nil
	}
	// The lease is dropped only once the key is gone: until then, reads
	// still see it expired (dropping it first let a List in between
	// return the expired key).
	_, err := s.inner.Delete(ctx, store.Ephemeral, key, l.rev)
	if err == nil {
		s.mu.Lock()
		if cur, ok := s.leases[key]; ok && cur.rev == l.rev {
			delete(s.leases, key)
		}
		s.mu.Unlock()
	}
	return err
}

// reapAll reaps every key whose lease has passed.
func (s *lazyTTL) reapAll(ctx context.Context) {
	s.mu.Lock()
	var keys []string
	for k := range s.leases {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	for _, k := range keys {
		_ = s.reap(ctx, k)
	}
}

// arm sets key's lease from start; extend only moves an existing one.
func (s *lazyTTL) arm(key string, rev store.Revision, start time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leases[key] = lease{at: start.Add(s.ttl), rev: rev}
}

func (s *lazyTTL) extend(key string, start time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.leases[key]; ok {
		l.at = start.Add(s.ttl)
		s.leases[key] = l
	}
}

func (s *lazyTTL) Create(ctx context.Context, ks store.Keyspace, key string, value []byte) (store.Revision, bool, error) {
	if ks != store.Ephemeral {
		return s.inner.Create(ctx, ks, key, value)
	}
	if err := s.reap(ctx, key); err != nil {
		return 0, false, err
	}
	start := time.Now()
	rev, ok, err := s.inner.Create(ctx, ks, key, value)
	switch {
	case ok:
		s.arm(key, rev, start)
	case err == nil && s.bugs.rearmOnLostCreate:
		s.extend(key, start)
	}
	return rev, ok, err
}

func (s *lazyTTL) Update(ctx context.Context, ks store.Keyspace, key string, value []byte, expected store.Revision) (store.Revision, bool, error) {
	if ks != store.Ephemeral {
		return s.inner.Update(ctx, ks, key, value, expected)
	}
	if err := s.reap(ctx, key); err != nil {
		return 0, false, err
	}
	start := time.Now()
	rev, ok, err := s.inner.Update(ctx, ks, key, value, expected)
	switch {
	case ok && s.bugs.noRearmOnUpdate:
		s.mu.Lock()
		s.leases[key] = lease{at: s.leases[key].at, rev: rev}
		s.mu.Unlock()
	case ok:
		s.arm(key, rev, start)
	case err == nil && s.bugs.rearmOnLostUpdate:
		s.extend(key, start)
	}
	return rev, ok, err
}

func (s *lazyTTL) Get(ctx context.Context, ks store.Keyspace, key string) (store.Entry, bool, error) {
	if ks == store.Ephemeral && s.expired(key) {
		if err := ctx.Err(); err != nil {
			return s.inner.Get(ctx, ks, key) // for the error
		}
		return store.Entry{}, false, nil
	}
	return s.inner.Get(ctx, ks, key)
}

func (s *lazyTTL) Delete(ctx context.Context, ks store.Keyspace, key string, expected store.Revision) (bool, error) {
	if ks != store.Ephemeral {
		return s.inner.Delete(ctx, ks, key, expected)
	}
	if err := s.reap(ctx, key); err != nil {
		return false, err
	}
	start := time.Now()
	ok, err := s.inner.Delete(ctx, ks, key, expected)
	switch {
	case ok:
		s.mu.Lock()
		delete(s.leases, key)
		s.mu.Unlock()
	case err == nil && s.bugs.rearmOnLostDelete:
		s.extend(key, start)
	}
	return ok, err
}

func (s *lazyTTL) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	if ks == store.Ephemeral && !s.bugs.staleSnapshot {
		s.reapAll(ctx)
	}
	return s.inner.Watch(ctx, ks, prefix)
}

func (s *lazyTTL) List(ctx context.Context, ks store.Keyspace, prefix string) ([]store.Entry, error) {
	es, err := s.inner.List(ctx, ks, prefix)
	if err != nil || ks != store.Ephemeral {
		return es, err
	}
	live := es[:0]
	for _, e := range es {
		if !s.expired(e.Key) {
			live = append(live, e)
		}
	}
	return live, nil
}

func (s *lazyTTL) Close() error {
	s.once.Do(func() { close(s.stop) })
	s.done.Wait()
	return s.inner.Close()
}

// owner is a store that hands out values it does not own properly; mode
// says how.
type owner struct {
	store.Store
	mode ownerMode

	mu   sync.Mutex
	vals map[store.Keyspace]map[string]*owned
}

// ownerMode is how an owner mishandles values.
type ownerMode int

const (
	keepsCallersSlice ownerMode = iota // stores the caller's slice and hands it out
	handsOutItsBuffer                  // hands out the slice it keeps
	rewritesItsBuffer                  // hands out the slice it keeps and overwrites it on the next write
)

// owned is the slice an owner keeps for one revision of a key.
type owned struct {
	rev store.Revision
	buf []byte
}

func (s *owner) keep(ks store.Keyspace, key string, rev store.Revision, value []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vals == nil {
		s.vals = map[store.Keyspace]map[string]*owned{}
	}
	if s.vals[ks] == nil {
		s.vals[ks] = map[string]*owned{}
	}
	o := s.vals[ks][key]
	switch {
	case s.mode == keepsCallersSlice:
		s.vals[ks][key] = &owned{rev: rev, buf: value}
	case s.mode == rewritesItsBuffer && o != nil:
		o.rev, o.buf = rev, append(o.buf[:0], value...)
	default:
		s.vals[ks][key] = &owned{rev: rev, buf: append([]byte{}, value...)}
	}
}

// handOut replaces e's value with the kept slice of its revision.
func (s *owner) handOut(ks store.Keyspace, e *store.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.vals[ks][e.Key]; o != nil && o.rev == e.Revision {
		e.Value = o.buf
	}
}

func (s *owner) Create(ctx context.Context, ks store.Keyspace, key string, value []byte) (store.Revision, bool, error) {
	rev, ok, err := s.Store.Create(ctx, ks, key, value)
	if ok {
		s.keep(ks, key, rev, value)
	}
	return rev, ok, err
}

func (s *owner) Update(ctx context.Context, ks store.Keyspace, key string, value []byte, expected store.Revision) (store.Revision, bool, error) {
	rev, ok, err := s.Store.Update(ctx, ks, key, value, expected)
	if ok {
		s.keep(ks, key, rev, value)
	}
	return rev, ok, err
}

func (s *owner) Get(ctx context.Context, ks store.Keyspace, key string) (store.Entry, bool, error) {
	e, ok, err := s.Store.Get(ctx, ks, key)
	if ok {
		s.handOut(ks, &e)
	}
	return e, ok, err
}

func (s *owner) List(ctx context.Context, ks store.Keyspace, prefix string) ([]store.Entry, error) {
	es, err := s.Store.List(ctx, ks, prefix)
	for i := range es {
		s.handOut(ks, &es[i])
	}
	return es, err
}
