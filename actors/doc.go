// Package actors implements [coordination.Coordinator] as a small system of
// actors on the hollywood engine (github.com/anthdm/hollywood).
//
// One call of [Spawn] creates one worker: a root actor and its children
// (watch, lease, leader, splitwriter, revoke) on the caller's
// engine, every actor id carrying the instance id and the worker's nonce,
// so several workers may share one engine and one store, and the commit
// writer, an actor with a mailbox of its own that writes the commits. The returned [*Coordinator]
// is the handle a driver calls:
//
//	e, _ := actor.NewEngine(actor.NewEngineConfig())
//	c, err := actors.Spawn(e, st, coordination.DefaultConfig()) // validates; no store I/O
//	c.SetWaker(w)
//	_ = c.Start(planner)                                         // joins in the background
//	evs, err := c.Poll()                                         // never blocks
//	defer c.Depart()                                             // always the last call
//
// # Guarantees
//
// Poll, SetWaker and SetStop never block. Every other call is bounded in
// real time even when the store stops answering: CommitFinal within
// OpTimeout + 100ms, Depart within 2 x OpTimeout + 100ms, the others within
// 3 x OpTimeout + 100ms. Leases, presence and leadership are renewed in the
// background whether or not the driver polls. A panic inside an actor or a
// goroutine of the worker is recovered and becomes a latched Fatal
// `internal error: <value>`; it never crashes the process. Protocol timers
// run on Config.Clock; real time only bounds and measures I/O. Depart and
// Abort stop every actor, timer and goroutine of the worker and wait for
// them, so a test may run workers inside a testing/synctest bubble.
//
// # Non-guarantees
//
// Ownership is fenced by compare-and-swap on the store, not by timing: the
// library does not promise that a worker learns of a lost split before a
// peer claims it, only that the lost worker's later commits write nothing
// and return Fenced. Delivery is at-least-once. A call that timed out is
// not cancelled: its write may still land. With a server-side store (NATS)
// Config.Clock must be the real clock.
package actors
