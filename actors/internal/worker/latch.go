package worker

import "context"

// Latch is the worker's failure latch (docs/architecture.md, "What
// `worker.Env` holds"): it fires once, at the first failure (Env.Fail, from
// any goroutine: a failure anywhere halts the worker) or at the handle's
// Abort, and never resets. Once fired the worker is halted: the guarded
// store refuses every write and every loop stops, so no write slips out
// after a failure while a message is in flight (a message would arrive
// behind the writes already queued).
//
// A Latch is an immutable handle: a context cancelled with the failure as
// its cause. Copies share it, so Spawn hands one to the Env, the guarded
// store and the outbox (which wakes the driver when it fires, AfterFire).
// The zero Latch is not usable; make one with NewLatch.
type Latch struct {
	fired context.Context         // done once fired; its cause is the failure
	fire  context.CancelCauseFunc // the first call wins
}

// NewLatch returns a Latch that has not fired.
func NewLatch() Latch {
	ctx, fire := context.WithCancelCause(context.Background())
	return Latch{fired: ctx, fire: fire}
}

// Fire latches err unless the latch fired already (the first wins). A nil
// err latches context.Canceled.
func (l Latch) Fire(err error) { l.fire(err) }

// Halted reports whether the latch fired: no further writes.
func (l Latch) Halted() bool { return l.fired.Err() != nil }

// Failure returns what fired the latch (the first failure, or ErrAborted),
// or nil.
func (l Latch) Failure() error { return context.Cause(l.fired) }

// AfterFire arranges to call f in its own goroutine once the latch fires
// (at once if it has); stop cancels that if it has not run.
func (l Latch) AfterFire(f func()) (stop func() bool) { return context.AfterFunc(l.fired, f) }
