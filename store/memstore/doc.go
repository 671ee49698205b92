// Package memstore is an in-memory [store.Store]: the default test backend,
// a backend for several coordinators sharing one process, and the executable
// definition of the store contract (package store).
//
// # Usage
//
//	clk := clock.NewMock()
//	st := memstore.New(1500*time.Millisecond, memstore.WithClock(clk))
//	defer st.Close()
//	rev, ok, err := st.Create(ctx, store.Ephemeral, "lease.s1", []byte("w1"))
//	clk.Add(1500 * time.Millisecond) // the lease expires; watchers see a Delete
//
// Share the clock with the coordinators that use the store (Config.Clock), so
// that lease expiry and the coordinators' timers agree.
//
// # Guarantees
//
// Each keyspace has its own revision counter starting at 1; every put and
// every delete, explicit or by expiry, takes the next value. Drawing the
// revision, changing the entry and publishing the event to watchers happen
// under one lock, so a watcher sees every key's events in revision order and
// never a gap between its snapshot and its tail.
//
// An ephemeral entry written at clock time t is live while now < t+leaseTTL
// and expired from t+leaseTTL on (equality counts as expired). Every
// operation first deletes the expired entries, publishing their Deletes, so
// no operation and no watch snapshot ever sees an expired key.
//
// Untouched expired entries are deleted by one clock timer, armed with
// clock.AfterFunc for the earliest pending deadline. With the real clock it
// fires at the deadline; with a *clock.Mock it fires while Add or Set moves
// the mock past the deadline, and the Delete is published by the goroutine
// AfterFunc starts, within a millisecond or so of real time. Inside a
// testing/synctest bubble, synctest.Wait after Add therefore returns only once
// the Delete is buffered in every watcher. No goroutine polls: an idle store
// has no goroutine at all, so it never keeps a bubble busy, and Close stops
// the timer.
//
// Values are copied on the way in and on the way out: callers may modify
// their slices afterwards. Each watcher buffers its whole snapshot plus up to
// 4096 live events; a consumer further behind is broken with Retryable "watch
// lagged by more than 4096 events; re-watch". Operations fail only with
// Retryable for a done context, Fatal for a value above the cap set by
// [WithMaxValueSize], and Fatal "store is closed".
//
// # Non-guarantees
//
// Nothing is persisted: closing the store or ending the process loses every
// entry. List and watch snapshots happen to be sorted by key; callers must not
// rely on that order. A mock clock that is moved backwards does not revive
// expired entries. The store never fences or checks who writes: that is the
// coordinator's job.
package memstore
