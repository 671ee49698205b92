package storetest

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// mutantTTL is the lease TTL of every store of these tests, short to keep
// the TTL checks quick (the suite times them from LeaseTTL).
const mutantTTL = 500 * time.Millisecond

// allChecks makes TestMutants run the whole suite against every mutant and
// log which checks catch it, instead of only the check each row names.
var allChecks = flag.Bool("mutants.all", false, "run every check against every mutant and log which ones catch it")

// mutantEnv names the mutant a child test process runs the suite against.
const mutantEnv = "STORETEST_MUTANT"

// mutant is a store with one planted bug, and the check that must catch it
// (a subtest path of Run, such as "Parallel/EphemeralLiveUntilItsTTL").
type mutant struct {
	name  string
	catch string
	build func() store.Store
}

// mem is a fresh memstore of the tests' TTL.
func mem() store.Store { return memstore.New(mutantTTL) }

// mutants is the table of planted bugs: each is a way a real backend breaks
// the contract.
func mutants() []mutant {
	return []mutant{
		// Caught only by the checks issue #17 added.
		{"loses writes made while a watch starts", "Parallel/WatchNoGapRacingStartOnKeysWrittenOnce", func() store.Store { return &lossyStart{Store: mem()} }},
		{"drops events when the consumer lags", "Parallel/WatchLaggingConsumerMissesNothing", func() store.Store { return &dropping{Store: mem()} }},
		{"pages List and unlocks between pages", "Parallel/ListWhileEarlierKeysChurn", func() store.Store { return &pagedList{Store: mem()} }},
		{"expires at half the TTL", "Parallel/EphemeralLiveUntilItsTTL", func() store.Store { return &shortTTL{Store: memstore.New(mutantTTL / 2), ttl: mutantTTL} }},
		{"a losing Create re-arms the TTL", "Parallel/EphemeralLosingWritesNeverRearm", func() store.Store {
			return newLazyTTL(memstore.New(time.Hour), mutantTTL, mutantTTL/4, lazyBugs{rearmOnLostCreate: true})
		}},
		{"a losing Update re-arms the TTL", "Parallel/EphemeralLosingWritesNeverRearm", func() store.Store {
			return newLazyTTL(memstore.New(time.Hour), mutantTTL, mutantTTL/4, lazyBugs{rearmOnLostUpdate: true})
		}},
		{"a losing guarded Delete re-arms the TTL", "Parallel/EphemeralLosingWritesNeverRearm", func() store.Store {
			return newLazyTTL(memstore.New(time.Hour), mutantTTL, mutantTTL/4, lazyBugs{rearmOnLostDelete: true})
		}},
		{"a new watch's snapshot holds an expired key", "Parallel/WatchSnapshotRightAfterExpiryOmitsKey", func() store.Store {
			// It sweeps rarely, so that the expired key is still unswept when
			// the check's watch starts, however loaded the machine.
			return newLazyTTL(memstore.New(time.Hour), mutantTTL, 20*mutantTTL, lazyBugs{staleSnapshot: true})
		}},
		{"keeps the caller's value slice", "ValueOwnership", func() store.Store { return &owner{Store: mem(), mode: keepsCallersSlice} }},
		{"hands out its own buffer", "ValueOwnership", func() store.Store { return &owner{Store: mem(), mode: handsOutItsBuffer} }},
		{"rewrites a buffer it handed out", "ValueOwnership", func() store.Store { return &owner{Store: mem(), mode: rewritesItsBuffer} }},
		{"a Create racing a Delete loses on an absent key", "Parallel/PropertyLinearizable", func() store.Store { return &flakyCreate{Store: mem(), deleting: map[string]int{}} }},

		// The classics, which the suite caught before.
		{"never sends SnapshotDone when nothing matches", "Parallel/WatchSnapshotDoneWhenNothingMatches", func() store.Store {
			return &watchEdit{Store: mem(), edit: func() func(store.WatchEvent, func(store.WatchEvent) bool) {
				puts := 0
				return func(ev store.WatchEvent, emit func(store.WatchEvent) bool) {
					if ev.Kind == store.Put {
						puts++
					}
					if ev.Kind != store.SnapshotDone || puts > 0 {
						emit(ev)
					}
				}
			}}
		}},
		{"sends SnapshotDone twice", "WatchSnapshotThenTail", func() store.Store {
			return &watchEdit{Store: mem(), edit: duplicating(store.SnapshotDone)}
		}},
		{"a Create overwrites a live key", "CreateIfAbsent", func() store.Store { return &overwritingCreate{Store: mem()} }},
		{"Update ignores the expected revision", "UpdateCompareAndSwap", func() store.Store { return &blindUpdate{Store: mem()} }},
		{"a guarded Delete ignores the revision", "GuardedDelete", func() store.Store { return &blindDelete{Store: mem()} }},
		{"a guarded Delete of an absent key loses", "GuardedDelete", func() store.Store { return &absentDeleteLoses{Store: mem()} }},
		{"List ignores the prefix", "ListExactlyLiveKeysUnderPrefix", func() store.Store { return &listAll{Store: mem()} }},
		{"ephemeral keys never expire", "Parallel/EphemeralExpiresWhenSilent", func() store.Store { return &shortTTL{Store: memstore.New(time.Hour), ttl: mutantTTL} }},
		{"a done context is Fatal", "DoneContextIsRetryable", func() store.Store { return &fatalContext{Store: mem()} }},
		{"Err is set after Stop", "WatchStopClosesEvents", func() store.Store { return &errAfterStop{Store: mem()} }},
		{"the keyspaces share one map", "KeyspacesAreIndependent", func() store.Store { return &oneKeyspace{Store: mem()} }},
		{"a losing Create returns the live revision", "CreateIfAbsent", func() store.Store { return &revealingCreate{Store: mem()} }},
		{"a watch snapshot holds deleted keys", "WatchSnapshotHoldsNoDeletes", func() store.Store { return newTombstones(mem()) }},
		{"watch prefixes match whole tokens only", "Parallel/WatchPlainPrefix", func() store.Store { return &tokenPrefix{Store: mem()} }},
		{"Close leaves watches open", "CloseEndsWatchesAndFailsOperations", func() store.Store { return &openAfterClose{Store: mem()} }},
		{"an empty value reads as absent", "ValuesRoundTrip", func() store.Store { return &emptyIsAbsent{Store: mem()} }},
		{"a winning Update does not re-arm the TTL", "Parallel/EphemeralKeepAlive", func() store.Store {
			return newLazyTTL(memstore.New(time.Hour), mutantTTL, mutantTTL/4, lazyBugs{noRearmOnUpdate: true})
		}},
	}
}

// legalStores are stores the contract allows that once failed the suite,
// and a correct custom design: the whole suite must pass them.
func legalStores() []mutant {
	return []mutant{
		{"delivers every Put twice", "", func() store.Store { return &watchEdit{Store: mem(), edit: duplicating(store.Put)} }},
		{"delivers every Delete twice", "", func() store.Store { return &watchEdit{Store: mem(), edit: duplicating(store.Delete)} }},
		{"delivers some keys 20ms late", "", func() store.Store { return &delayedKeys{Store: mem()} }},
		{"keeps expiry itself and sweeps lazily", "", func() store.Store {
			return newLazyTTL(memstore.New(time.Hour), mutantTTL, mutantTTL/4, lazyBugs{})
		}},
		{"expires early by as much as it declares", "", func() store.Store {
			return &declaredEarly{shortTTL{Store: memstore.New(mutantTTL * 3 / 4), ttl: mutantTTL}}
		}},
	}
}

// TestLegalStoresPass runs the whole suite against every legal store.
func TestLegalStoresPass(t *testing.T) {
	for _, l := range legalStores() {
		t.Run(l.name, func(t *testing.T) {
			Run(t, func(*testing.T, time.Duration) store.Store { return l.build() })
		})
	}
}

// TestMutantChild runs the suite against the mutant named by mutantEnv; it
// is a child process of TestMutants and skips when run directly.
func TestMutantChild(t *testing.T) {
	name := os.Getenv(mutantEnv)
	if name == "" {
		t.Skip("run by TestMutants")
	}
	for _, m := range mutants() {
		if m.name == name {
			Run(t, func(*testing.T, time.Duration) store.Store { return m.build() })
			return
		}
	}
	t.Fatalf("no mutant %q", name)
}

// TestMutants runs each mutant's catching check in a child process (a
// failing check cannot be observed from inside the same test binary) and
// fails unless that check fails. With -mutants.all it runs the whole suite
// and logs every check that caught the mutant.
func TestMutants(t *testing.T) {
	if testing.Short() {
		t.Skip("mutants run child processes; skipped in -short mode")
	}
	caught := 0
	for _, m := range mutants() {
		t.Run(m.name, func(t *testing.T) {
			run := "^TestMutantChild$/^" + strings.ReplaceAll(regexp.QuoteMeta(m.catch), "/", "$/^") + "$"
			if *allChecks {
				run = "^TestMutantChild$"
			}
			began := time.Now()
			cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), mutantEnv+"="+m.name)
			out, err := cmd.CombinedOutput()
			took := time.Since(began).Round(time.Millisecond)
			failed := failedChecks(string(out))
			if err == nil {
				t.Fatalf("the suite passed the mutant (%s); want %s to fail it", took, m.catch)
			}
			if len(failed) == 0 {
				t.Fatalf("the child failed (%v, %s) but no check did\n%s", err, took, tail(out))
			}
			if !*allChecks && !slices.Contains(failed, m.catch) {
				t.Fatalf("the child failed (%v, %s) but not in %s; failed: %v\n%s", err, took, m.catch, failed, tail(out))
			}
			caught++
			t.Logf("caught in %s by %v", took, failed)
		})
	}
	t.Logf("%d of %d mutants caught", caught, len(mutants()))
}

// failRE matches a failed subtest of TestMutantChild.
var failRE = regexp.MustCompile(`--- FAIL: TestMutantChild/(\S+)`)

// failedChecks returns the checks (paths such as "GuardedDelete" or
// "Parallel/EphemeralKeepAlive") failed in a child's output.
func failedChecks(out string) []string {
	var checks []string
	for _, m := range failRE.FindAllStringSubmatch(out, -1) {
		c := m[1]
		group, _, nested := strings.Cut(c, "/")
		switch {
		case !nested && c != "Parallel" && c != "Timed":
			checks = append(checks, c) // a sequential check
		case (group == "Parallel" || group == "Timed") && strings.Count(c, "/") == 1:
			checks = append(checks, c) // a parallel check ("Timed" before issue #17)
		}
	}
	return checks
}

// tail returns the end of a child's output for a failure message.
func tail(out []byte) string {
	if len(out) > 3000 {
		out = out[len(out)-3000:]
	}
	return string(out)
}

// lossyStart takes its watch snapshot by List and only then subscribes to
// the tail, so writes in between are in neither.
type lossyStart struct{ store.Store }

func (s *lossyStart) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	snap, err := s.Store.List(ctx, ks, prefix)
	if err != nil {
		return nil, err
	}
	// The round trip between the two requests, stretched until a write
	// lands in it (at most 200ms), so that the mutant loses one whenever
	// writers are active, however loaded the machine.
	for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if now, err := s.Store.List(ctx, ks, prefix); err != nil || len(now) != len(snap) {
			break
		}
	}
	w, err := s.Store.Watch(ctx, ks, prefix)
	if err != nil {
		return nil, err
	}
	sent, inSnapshot := false, true
	return newRelay(w, 0, func(ev store.WatchEvent, emit func(store.WatchEvent) bool) {
		if !sent {
			for _, e := range snap {
				emit(store.WatchEvent{Kind: store.Put, Entry: e})
			}
			emit(store.WatchEvent{Kind: store.SnapshotDone})
			sent = true
		}
		switch {
		case ev.Kind == store.SnapshotDone:
			inSnapshot = false
		case !inSnapshot:
			emit(ev)
		}
	}), nil
}

// dropping drops the events its consumer leaves unread beyond 256.
type dropping struct{ store.Store }

func (s *dropping) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	w, err := s.Store.Watch(ctx, ks, prefix)
	if err != nil {
		return nil, err
	}
	r := &relay{inner: w, out: make(chan store.WatchEvent, 256), stop: make(chan struct{})}
	go func() {
		defer close(r.out)
		for ev := range w.Events() {
			select {
			case r.out <- ev:
			default: // the consumer lags: drop it
			}
		}
	}()
	return r, nil
}

// errAfterStop reports an error from a watch's Err after Stop.
type errAfterStop struct{ store.Store }

func (s *errAfterStop) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	w, err := s.Store.Watch(ctx, ks, prefix)
	if err != nil {
		return nil, err
	}
	r := newRelay(w, 0, passThrough)
	var stopped atomic.Bool
	r.err = func() error {
		if stopped.Load() {
			return coordination.Errorf(coordination.Retryable, "watch stopped")
		}
		return w.Err()
	}
	return &stopHook{relay: r, onStop: func() { stopped.Store(true) }}, nil
}

// stopHook is a relay that calls onStop first on Stop.
type stopHook struct {
	*relay
	onStop func()
}

func (h *stopHook) Stop() { h.onStop(); h.relay.Stop() }

// pagedList lists in pages of 50 by offset, each page a fresh listing, and
// lets other calls in between pages.
type pagedList struct{ store.Store }

func (s *pagedList) List(ctx context.Context, ks store.Keyspace, prefix string) ([]store.Entry, error) {
	const page = 50
	var out []store.Entry
	for off := 0; ; off += page {
		all, err := s.Store.List(ctx, ks, prefix) // sorted by key
		if err != nil {
			return nil, err
		}
		if off >= len(all) {
			return out, nil
		}
		out = append(out, all[off:min(off+page, len(all))]...)
		runtime.Gosched() // the lock is released between pages
	}
}

// flakyCreate loses a Create of a key while a Delete of it is in flight,
// as a backend whose create is a compare-and-swap on the key's last
// tombstone does when a delete writes a new one.
type flakyCreate struct {
	store.Store
	mu       sync.Mutex
	deleting map[string]int // Deletes in flight by key
}

func (s *flakyCreate) Create(ctx context.Context, ks store.Keyspace, key string, value []byte) (store.Revision, bool, error) {
	s.mu.Lock()
	racing := s.deleting[key] > 0
	s.mu.Unlock()
	if racing {
		return 0, false, nil
	}
	return s.Store.Create(ctx, ks, key, value)
}

func (s *flakyCreate) Delete(ctx context.Context, ks store.Keyspace, key string, expected store.Revision) (bool, error) {
	s.mu.Lock()
	s.deleting[key]++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.deleting[key]--
		s.mu.Unlock()
	}()
	time.Sleep(time.Millisecond) // the delete's round trip
	return s.Store.Delete(ctx, ks, key, expected)
}

// overwritingCreate writes a live key instead of losing.
type overwritingCreate struct{ store.Store }

func (s *overwritingCreate) Create(ctx context.Context, ks store.Keyspace, key string, value []byte) (store.Revision, bool, error) {
	if e, ok, err := s.Store.Get(ctx, ks, key); err == nil && ok {
		return s.Store.Update(ctx, ks, key, value, e.Revision)
	}
	return s.Store.Create(ctx, ks, key, value)
}

// blindUpdate updates a live key at whatever revision it has.
type blindUpdate struct{ store.Store }

func (s *blindUpdate) Update(ctx context.Context, ks store.Keyspace, key string, value []byte, expected store.Revision) (store.Revision, bool, error) {
	if e, ok, err := s.Store.Get(ctx, ks, key); err == nil && ok {
		expected = e.Revision
	}
	return s.Store.Update(ctx, ks, key, value, expected)
}

// blindDelete deletes unconditionally.
type blindDelete struct{ store.Store }

func (s *blindDelete) Delete(ctx context.Context, ks store.Keyspace, key string, _ store.Revision) (bool, error) {
	return s.Store.Delete(ctx, ks, key, 0)
}

// absentDeleteLoses reports a guarded Delete of an absent key as lost.
type absentDeleteLoses struct{ store.Store }

func (s *absentDeleteLoses) Delete(ctx context.Context, ks store.Keyspace, key string, expected store.Revision) (bool, error) {
	if _, ok, err := s.Store.Get(ctx, ks, key); err == nil && !ok && expected != 0 {
		return false, nil
	}
	return s.Store.Delete(ctx, ks, key, expected)
}

// listAll ignores List's prefix.
type listAll struct{ store.Store }

func (s *listAll) List(ctx context.Context, ks store.Keyspace, _ string) ([]store.Entry, error) {
	return s.Store.List(ctx, ks, "")
}

// fatalContext reports a done context as Fatal.
type fatalContext struct{ store.Store }

func (s *fatalContext) Get(ctx context.Context, ks store.Keyspace, key string) (store.Entry, bool, error) {
	if err := ctx.Err(); err != nil {
		return store.Entry{}, false, coordination.Errorf(coordination.Fatal, "get %q: %w", key, err)
	}
	return s.Store.Get(ctx, ks, key)
}

// oneKeyspace keeps both keyspaces in the durable one.
type oneKeyspace struct{ store.Store }

func (s *oneKeyspace) Create(ctx context.Context, _ store.Keyspace, key string, value []byte) (store.Revision, bool, error) {
	return s.Store.Create(ctx, store.Durable, key, value)
}

func (s *oneKeyspace) Get(ctx context.Context, _ store.Keyspace, key string) (store.Entry, bool, error) {
	return s.Store.Get(ctx, store.Durable, key)
}

// revealingCreate returns the live revision from a losing Create.
type revealingCreate struct{ store.Store }

func (s *revealingCreate) Create(ctx context.Context, ks store.Keyspace, key string, value []byte) (store.Revision, bool, error) {
	rev, ok, err := s.Store.Create(ctx, ks, key, value)
	if err == nil && !ok {
		if e, live, gerr := s.Store.Get(ctx, ks, key); gerr == nil && live {
			return e.Revision, false, nil
		}
	}
	return rev, ok, err
}

// tombstones puts a Delete for every key it deleted into each watch's
// snapshot, as a backend replaying a log with its tombstones does.
type tombstones struct {
	store.Store
	mu      sync.Mutex
	deleted map[string]bool
}

func newTombstones(inner store.Store) *tombstones {
	return &tombstones{Store: inner, deleted: map[string]bool{}}
}

func (s *tombstones) Delete(ctx context.Context, ks store.Keyspace, key string, expected store.Revision) (bool, error) {
	ok, err := s.Store.Delete(ctx, ks, key, expected)
	if ok {
		s.mu.Lock()
		s.deleted[key] = true
		s.mu.Unlock()
	}
	return ok, err
}

func (s *tombstones) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	w, err := s.Store.Watch(ctx, ks, prefix)
	if err != nil {
		return nil, err
	}
	return newRelay(w, 0, func(ev store.WatchEvent, emit func(store.WatchEvent) bool) {
		if ev.Kind == store.SnapshotDone {
			s.mu.Lock()
			var keys []string
			for k := range s.deleted {
				if strings.HasPrefix(k, prefix) {
					keys = append(keys, k)
				}
			}
			s.mu.Unlock()
			for _, k := range keys {
				emit(store.WatchEvent{Kind: store.Delete, Entry: store.Entry{Key: k, Revision: 1}})
			}
		}
		emit(ev)
	}), nil
}

// tokenPrefix matches watch prefixes only at dot-separated token
// boundaries, as a subject-based backend does without care.
type tokenPrefix struct{ store.Store }

func (s *tokenPrefix) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	w, err := s.Store.Watch(ctx, ks, prefix)
	if err != nil {
		return nil, err
	}
	return newRelay(w, 0, func(ev store.WatchEvent, emit func(store.WatchEvent) bool) {
		k := ev.Entry.Key
		whole := prefix == "" || strings.HasSuffix(prefix, ".") || k == prefix || strings.HasPrefix(k, prefix+".")
		if ev.Kind == store.SnapshotDone || whole {
			emit(ev)
		}
	}), nil
}

// openAfterClose leaves its watches' Events open after Close.
type openAfterClose struct{ store.Store }

func (s *openAfterClose) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	w, err := s.Store.Watch(ctx, ks, prefix)
	if err != nil {
		return nil, err
	}
	r := &relay{inner: w, out: make(chan store.WatchEvent), stop: make(chan struct{})}
	go func() {
		defer close(r.out)
		for ev := range w.Events() {
			select {
			case r.out <- ev:
			case <-r.stop:
				return
			}
		}
		<-r.stop // only Stop closes Events
	}()
	return r, nil
}

// emptyIsAbsent reads a key with an empty value as absent.
type emptyIsAbsent struct{ store.Store }

func (s *emptyIsAbsent) Get(ctx context.Context, ks store.Keyspace, key string) (store.Entry, bool, error) {
	e, ok, err := s.Store.Get(ctx, ks, key)
	if ok && len(e.Value) == 0 {
		return store.Entry{}, false, nil
	}
	return e, ok, err
}

// declaredEarly expires keys at 3/4 of its LeaseTTL and declares it as its
// ExpiryPrecision (with a margin), which the contract allows.
type declaredEarly struct{ shortTTL }

func (s *declaredEarly) ExpiryPrecision() time.Duration { return s.ttl/4 + 10*time.Millisecond }
