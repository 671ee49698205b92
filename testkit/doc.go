// Package testkit holds test doubles and a fleet simulation for code built on
// package coordination. Nothing in the library imports it; tests and examples
// do.
//
// # Scripted coordinator
//
// [NewScripted] returns a [ScriptedCoordinator], a deterministic
// coordination.Coordinator with no store and no clock, and the
// [CoordinatorScript] that drives it: a test queues events (Gain, Lose,
// Revoke, Quarantine, AllComplete, Stalled), scripts per-split outcomes for
// Commit and Fail, and then reads back what the code under test did (commits,
// final commits, failures, releases, declines, departure). It is the double
// the driver package is tested with.
//
//	c, s := testkit.NewScripted()
//	d := driver.New(c, src)
//	_ = d.Start(planner)
//	s.Gain(coordination.SplitSpec{ID: "s1", Weight: 1}, 1, nil)
//	ev, err := d.PollEvents(0) // driver.LanesAdded
//
// # Fleet simulation
//
// The fleet runs several real coordinators (actors.Spawn) on one in-memory
// store that shares a mock clock with all of them, so a test advances time
// explicitly and observes every member's events. Each member reaches the
// store through its own fault-injecting wrapper ([FaultStore]), which can
// drop the next matching write, land it and lose the reply (once, or every
// matching write until disarmed), panic in it, fail reads, cut the member's
// watches, hang the store, partition the member from the store entirely, or
// replace the store under it (an older copy: a rollback). Fleets run inside
// testing/synctest bubbles, so "wait until every worker is idle" is exact
// and nothing sleeps:
//
//	testkit.RunFleet(t, func(t *testing.T, f *testkit.Fleet) {
//		f.Start("w1", planner)
//		f.Start("w2", planner)
//		f.Until("both finish", func() bool { ... })
//		f.CheckVerdicts()
//	})
//
// # Invariant checks
//
// While a fleet runs, every successful write and every emitted event is
// recorded and checked continuously against the protocol's invariants
// (watermarks and epochs never regress, no commit under a superseded epoch,
// terminal records never change, Gained epochs strictly increase across the
// fleet, every live member learns the same verdict). A violation fails the
// test naming the split, revisions and members involved.
//
// # Non-guarantees
//
// The scripted coordinator tracks no ownership: a commit of any split
// succeeds unless scripted otherwise, and it never emits events on its own.
// The fleet simulation exercises real coordinators but not a real network
// store; use the storetest conformance suite and the NATS tests for that.
package testkit
