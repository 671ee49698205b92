// Package storetest is the conformance suite for [store.Store]
// implementations: it checks a backend against the contract of package store
// with table checks, real-time TTL checks and pgregory.net/rapid properties.
//
// # Usage
//
// Call [Run] from a test of the backend's package, giving it a factory of
// fresh, empty stores:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, leaseTTL time.Duration) store.Store {
//			return memstore.New(leaseTTL)
//		})
//	}
//
// Run asks for a 2s lease TTL, the floor of natsstore. A backend may return a
// store with another positive LeaseTTL, for example a shorter one to run
// faster (memstore's own test uses 500ms); the suite times every check from
// the returned store's LeaseTTL. Run closes every store it gets; the factory
// registers the cleanup of anything else it starts with t.Cleanup. The rapid
// properties take the usual flags (-rapid.checks, -rapid.seed) and share one
// store per property, giving every check its own key prefix.
//
// # What it checks
//
// Create-if-absent and compare-and-swap outcomes, (0, false, nil) for a lost
// precondition, revisions that strictly increase per key across deletes and
// re-creates, guarded deletes (an absent key always wins), List contents,
// List over hundreds of stable keys while keys before them churn,
// independent keyspaces, byte-exact values (empty included), value
// ownership both ways (the caller may reuse a slice it wrote; a value handed
// out is never changed by the store and changing it does not reach the
// store), the value cap of a [store.ValueLimiter], Retryable errors that keep
// the cause for done contexts, Close; watches: snapshot, exactly one
// SnapshotDone, tail, plain string prefixes, SnapshotDone when nothing
// matches, no deletes or expired keys in a snapshot (also right after an
// expiry), no gap for writes racing the watch's start (on rewritten keys and
// on keys written once), a consumer that reads nothing for thousands of
// writes (every event arrives, or the watch breaks with Retryable), per-key
// revision order, Stop and cancellation closing Events with a nil Err;
// racing writers (exactly one winner per revision); keep-alive by writes
// every TTL/3, a key written once live until its TTL (less a declared
// [ExpiryPrecision]), losing Creates, Updates and guarded Deletes that never
// re-arm the TTL, and expiry of a silent key within the TTL plus
// max(TTL/2, 1.5s), seen by Get and by a watcher as a Delete above the key's
// last revision; a sequential model of random operation sequences; a watch
// replayed as the coordinator folds it reproducing List; and linearizability
// of concurrent histories of Create, Update, Get and guarded Delete from
// several goroutines, checked with github.com/anishathalye/porcupine (on a
// violation its HTML visualisation is written to the test's artifact
// directory and named in the failure). [CheckLinearizable] runs the same
// histories with a fault injected midway, such as a server restart.
//
// The checks accept what the contract allows: duplicate events (they dedupe
// by revision) and events of different keys in any order (they wait for
// each expected key's own revision, never for a marker key).
//
// "No gap" is checked as a consumer that folds by revision needs it: every
// write made after Watch returned is delivered, or superseded by a later
// delivered event of the same key. A history-1 backend (NATS KV) may collapse
// a superseded revision that its consumer had not yet read; the final state of
// every key must still be delivered, and a replay must reproduce List.
//
// Every check has one overall deadline; once a check times out, the later
// checks are skipped naming it, so a hung store fails in seconds.
//
// # Non-guarantees
//
// The suite does not measure performance, and cannot prove the absence of
// rare races: it samples them. A backend's own tests cover its
// configuration, errors and failure modes.
package storetest
