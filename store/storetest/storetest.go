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
}

// Run checks the Store implementation built by newStore against the store
// contract (SPEC §8, §26), including rapid property tests, as subtests of t.
//
// newStore returns a fresh, empty store whose LeaseTTL is leaseTTL. Run asks
// for 2s, the floor of natsstore. A backend may return a store with another
// positive LeaseTTL, typically a shorter one to run faster: every timing check
// is derived from the returned store's LeaseTTL. Run closes every store it gets
// when its subtest ends; newStore should register the cleanup of anything
// else it starts (a server, a temporary directory) with t.Cleanup.
//
// The stores must expire ephemeral keys in real time (a memstore on a mock
// clock never would). The checks that wait for it (keep-alive and expiry) run
// in parallel under the subtest "Timed", so a run takes about 3 TTLs plus the
// rest (about 11s for natsstore with its 2s TTL). Expiry must happen within
// the TTL plus max(TTL/2, 1.5s).
func Run(t *testing.T, newStore func(t *testing.T, leaseTTL time.Duration) store.Store) {
	for _, c := range checks() {
		t.Run(c.name, func(t *testing.T) { c.run(t, newStore) })
	}
	t.Run("Timed", func(t *testing.T) {
		for _, c := range timedChecks() {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.run(t, newStore)
			})
		}
	})
}

// checks are the checks that need no real time to pass.
func checks() []check {
	return []check{
		{"CreateIfAbsent", testCreateIfAbsent},
		{"UpdateCompareAndSwap", testUpdateCAS},
		{"RevisionsIncreaseAcrossDeleteAndRecreate", testRevisionsIncrease},
		{"DeletedKeyIsAbsentAndRecreatable", testDeletedKey},
		{"GuardedDelete", testGuardedDelete},
		{"ListExactlyLiveKeysUnderPrefix", testList},
		{"KeyspacesAreIndependent", testKeyspaces},
		{"ValuesRoundTrip", testValues},
		{"ValueCap", testValueCap},
		{"DoneContextIsRetryable", testDoneContext},
		{"WatchSnapshotThenTail", testWatchSnapshotThenTail},
		{"WatchPlainPrefix", testWatchPrefix},
		{"WatchSnapshotDoneWhenNothingMatches", testWatchNothingMatches},
		{"WatchSnapshotHoldsNoDeletes", testWatchSnapshotNoDeletes},
		{"WatchNoGapRacingStart", testWatchNoGap},
		{"WatchStopClosesEvents", testWatchStop},
		{"WatchContextCancelClosesEvents", testWatchCancel},
		{"CloseEndsWatchesAndFailsOperations", testClose},
		{"ConcurrentWritersOneWinner", testConcurrentWriters},
		{"PropertySequentialModel", testPropertyModel},
		{"PropertyWatchReplayMatchesList", testPropertyReplay},
	}
}

// timedChecks wait for leases to expire or to be kept alive in real time;
// Run runs them in parallel.
func timedChecks() []check {
	return []check{
		{"EphemeralKeepAlive", testKeepAlive},
		{"EphemeralExpiresWhenSilent", testExpires},
		{"WatchExpiryIsTailDelete", testWatchExpiry},
	}
}

// expirySlack is how long after its TTL a silent ephemeral key may still be
// live: the backend's expiry precision (one second on NATS) with a margin.
func expirySlack(ttl time.Duration) time.Duration {
	return max(ttl/2, 1500*time.Millisecond)
}

// keyspaces returns both keyspaces, for checks that hold on each.
func keyspaces() []store.Keyspace { return []store.Keyspace{store.Durable, store.Ephemeral} }
