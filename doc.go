// Package coordination is the seam between a data source and the machinery that
// divides its work among many workers of one pipeline.
//
// A leader, elected through a shared key-value store (package store), runs the
// source's [Planner], which enumerates the work as weighted splits. The leader
// publishes a sticky, weight-balanced assignment per worker; every worker leases
// the splits it is named for, drains the ones it is no longer named for, and
// commits per-split progress through epoch-fenced compare-and-swap.
//
// # Usage
//
//	c, err := actors.Spawn(engine, st, coordination.DefaultConfig())
//	w := coordination.NewWaker()
//	c.SetWaker(w)
//	err = c.Start(planner)
//	for range w.C() { events, err := c.Poll(); ... }
//
// Most embedders drive a [Coordinator] through package driver rather than by hand.
//
// # Guarantees
//
// Delivery is at least once: committed progress is never lost and never
// regresses, a stale owner's write lands nothing, and a cooperative move replays
// nothing. Poison splits are quarantined after [Config.MaxAttempts] delivery
// attempts; a bounded job ends with [AllComplete] or [Stalled].
//
// # Non-guarantees
//
// Exactly-once delivery, work stealing, count fairness and automatic requeue of
// quarantined splits are not provided. Leases and assignments only make takeover
// fast; the compare-and-swap on the progress record is the only fence.
package coordination
