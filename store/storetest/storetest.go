package storetest

import (
	"testing"
	"time"

	"github.com/spate-go/coordination/store"
)

// requestedTTL is the lease TTL Run asks newStore for: natsstore's floor, so
// that every shipped backend can honour it.
const requestedTTL = 2 * time.Second

// newStoreFunc is the type of Run's store factory.
type newStoreFunc = func(t *testing.T, leaseTTL time.Duration) store.Store

// check is one named conformance check.
type check struct {
	name string
	run  func(t *testing.T, newStore newStoreFunc)
	// span is how much real time the check spends on top of checkTimeout
	// (waiting for leases), given the store's LeaseTTL; nil means none.
	span func(ttl time.Duration) time.Duration
}

// Run checks the Store implementation built by newStore against the contract
// of package store, including rapid property tests and porcupine
// linearizability checks, as subtests of t.
//
// newStore returns a fresh, empty store whose LeaseTTL is leaseTTL. Run asks
// for 2s, the floor of natsstore. A backend may return a store with another
// positive LeaseTTL, typically a shorter one to run faster: every timing check
// is derived from the returned store's LeaseTTL. Run closes every store it gets
// when its subtest ends; newStore should register the cleanup of anything
// else it starts (a server, a temporary directory) with t.Cleanup.
//
// The stores must expire ephemeral keys in real time (a memstore on a mock
// clock never would). The checks that wait for it (keep-alive and expiry),
// and those that wait on the backend's latency (rapid properties, bulk
// writers), run in parallel under the subtest "Parallel", so a run takes
// about 3 TTLs plus the rest (about 15s for natsstore with its 2s TTL). Expiry must happen within
// the TTL plus max(TTL/2, 1.5s), and not before the TTL less the store's
// [ExpiryPrecision] (0 unless it declares one).
//
// Every operation has a deadline of 10s, and every check one overall
// deadline (90s, plus the real time a TTL check waits for), which bounds all
// its operations and waits. Once a check has timed out, the store is taken
// as hung and the later checks are skipped, naming that check, so that a
// hung store fails in seconds.
func Run(t *testing.T, newStore func(t *testing.T, leaseTTL time.Duration) store.Store) {
	s := &suite{}
	for _, c := range checks() {
		t.Run(c.name, func(t *testing.T) { s.run(t, c, newStore) })
	}
	t.Run("Parallel", func(t *testing.T) {
		for _, c := range parallelChecks() {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				s.run(t, c, newStore)
			})
		}
	})
}

// run runs one check with its budget, unless an earlier check hung.
func (s *suite) run(t *testing.T, c check, newStore newStoreFunc) {
	if hung := s.hungCheck(); hung != "" {
		t.Skipf("skipped: %s; the store looks hung", hung)
	}
	span := c.span
	if span == nil {
		span = func(time.Duration) time.Duration { return 0 }
	}
	b := &budget{check: t.Name(), suite: s, span: span}
	defer b.stop()
	c.run(t, func(t *testing.T, leaseTTL time.Duration) store.Store {
		st := newStore(t, leaseTTL)
		if st == nil {
			return nil
		}
		if ttl := st.LeaseTTL(); ttl > 0 {
			b.start(ttl)
		}
		return &checked{Store: st, b: b}
	})
}

// checks are the quick checks, which Run runs one after the other.
func checks() []check {
	return []check{
		{name: "CreateIfAbsent", run: testCreateIfAbsent},
		{name: "UpdateCompareAndSwap", run: testUpdateCAS},
		{name: "RevisionsIncreaseAcrossDeleteAndRecreate", run: testRevisionsIncrease},
		{name: "DeletedKeyIsAbsentAndRecreatable", run: testDeletedKey},
		{name: "GuardedDelete", run: testGuardedDelete},
		{name: "ListExactlyLiveKeysUnderPrefix", run: testList},
		{name: "KeyspacesAreIndependent", run: testKeyspaces},
		{name: "ValuesRoundTrip", run: testValues},
		{name: "ValueOwnership", run: testValueOwnership},
		{name: "ValueCap", run: testValueCap},
		{name: "DoneContextIsRetryable", run: testDoneContext},
		{name: "WatchSnapshotThenTail", run: testWatchSnapshotThenTail},
		{name: "WatchSnapshotHoldsNoDeletes", run: testWatchSnapshotNoDeletes},
		{name: "WatchNoGapRacingStart", run: testWatchNoGap},
		{name: "WatchStopClosesEvents", run: testWatchStop},
		{name: "WatchContextCancelClosesEvents", run: testWatchCancel},
		{name: "CloseEndsWatchesAndFailsOperations", run: testClose},
		{name: "ConcurrentWritersOneWinner", run: testConcurrentWriters},
	}
}

// parallelChecks are the checks that spend real time: waiting on a backend's
// latency (rapid properties, bulk writers) or for leases to expire or be
// kept alive. Run runs them in parallel, each on a store of its own.
func parallelChecks() []check {
	return []check{
		{name: "ListWhileEarlierKeysChurn", run: testListChurn},
		{name: "WatchPlainPrefix", run: testWatchPrefix},
		{name: "WatchSnapshotDoneWhenNothingMatches", run: testWatchNothingMatches},
		{name: "WatchNoGapRacingStartOnKeysWrittenOnce", run: testWatchNoGapWrittenOnce},
		{name: "WatchLaggingConsumerMissesNothing", run: testWatchLag},
		{name: "PropertySequentialModel", run: testPropertyModel},
		{name: "PropertyWatchReplayMatchesList", run: testPropertyReplay},
		{name: "PropertyLinearizable", run: testLinearizable},
		{name: "EphemeralKeepAlive", run: testKeepAlive, span: timedSpan},
		{name: "EphemeralExpiresWhenSilent", run: testExpires, span: timedSpan},
		{name: "EphemeralLiveUntilItsTTL", run: testLiveUntilTTL, span: timedSpan},
		{name: "EphemeralLosingWritesNeverRearm", run: testLosingWritesNeverRearm, span: timedSpan},
		{name: "WatchExpiryIsTailDelete", run: testWatchExpiry, span: timedSpan},
		{name: "WatchSnapshotRightAfterExpiryOmitsKey", run: testSnapshotAfterExpiry, span: timedSpan},
	}
}

// timedSpan is the real time a timed check may spend waiting on leases: the
// longest waits 3 TTLs (keep-alive), the others a TTL plus expirySlack.
func timedSpan(ttl time.Duration) time.Duration {
	return 3*ttl + expirySlack(ttl)
}

// expirySlack is how long after its TTL a silent ephemeral key may still be
// live: the backend's expiry precision (one second on NATS) with a margin.
// The checks count it from the write's acknowledgement, the latest moment
// the store can have stamped the write, so a slow round trip does not eat it.
func expirySlack(ttl time.Duration) time.Duration {
	return max(ttl/2, 1500*time.Millisecond)
}

// keyspaces returns both keyspaces, for checks that hold on each.
func keyspaces() []store.Keyspace { return []store.Keyspace{store.Durable, store.Ephemeral} }
