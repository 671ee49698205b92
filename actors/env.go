package actors

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// pids names the actors of one worker. Set once in Spawn before any message
// flows; read-only afterwards.
type pids struct {
	root, watch, lease, leader, assign, splitWriter, revoke *actor.PID
}

// env is what every actor of one worker shares: immutable configuration,
// the engine, the store, and the goroutine group. Nothing mutable except the
// WaitGroup and the atomics, which are safe for concurrent use.
type env struct {
	e     *actor.Engine
	raw   store.Store // the store as given (direct hand-back after failure)
	st    store.Store // raw wrapped: refuses writes once halted
	cfg   coordination.Config
	clk   clock.Clock
	id    string
	nonce string
	log   *slog.Logger
	met   *metrics
	out   *outbox
	pid   pids
	cap   int // the store's value cap, 0 = none

	backlog backlog // the credit of the watch hand-off (backlog.go)

	commits commitDesk // the commit writer (commitwriter.go), set by Spawn

	ctx    context.Context // cancelled at Depart's end or Abort
	cancel context.CancelFunc
	wg     sync.WaitGroup
	halted atomic.Bool   // no further writes (failed or aborted)
	fp     atomic.Uint64 // H(fingerprint), set by Start
	gone   atomic.Bool   // Depart began: never write the presence key again
	// sessionLive and watchesLive are what Healthy reads; the lease actor
	// writes both (docs/protocol.md, "Sessions", "Watches and reconcile").
	sessionLive, watchesLive atomic.Bool
	// session is the current session's nonce (docs/protocol.md, "Sessions");
	// the first session's is nonce, and only the lease actor replaces it.
	session atomic.Pointer[string]
}

// sessionNonce returns the current session's nonce.
func (v *env) sessionNonce() string { return *v.session.Load() }

// goFunc runs f on a goroutine owned by the worker: registered with the
// WaitGroup, recovering a panic into a Fatal failure.
func (v *env) goFunc(f func(ctx context.Context)) {
	v.wg.Go(func() {
		defer v.recoverPanic()
		f(v.ctx)
	})
}

// recoverPanic turns a panic into a latched Fatal `internal error`.
func (v *env) recoverPanic() {
	if r := recover(); r != nil {
		v.log.Error("internal error", "err", fmt.Sprint(r), "stack", string(debug.Stack()))
		v.fail(coordination.Errorf(coordination.Fatal, "internal error: %v", r))
	}
}

// fail latches err (the first Fatal wins) and halts writes. Safe from any
// goroutine.
func (v *env) fail(err error) {
	v.halted.Store(true)
	v.out.fail(err)
}

// failNow logs a Fatal condition and latches it at once, so that a call
// answered after it already sees the failure.
func (v *env) failNow(err error) {
	if v.out.failure() == nil {
		v.log.Error("coordinator failed", "err", err)
	}
	v.fail(err)
}

// send delivers msg to pid, from an actor, one of its goroutines or the
// handle. Once the worker shuts down (only shutdown ends v.ctx) nothing is
// delivered: such a report answers work the shutdown cut short ("context
// canceled"), and an actor taking it for a store fault would log a warning
// for a clean stop.
func (v *env) send(pid *actor.PID, msg any) {
	if v.ctx.Err() != nil {
		return
	}
	v.e.Send(pid, msg)
}

// after arms a clock timer that sends msg to pid.
func (v *env) after(d time.Duration, pid *actor.PID, msg any) *clock.Timer {
	return v.clk.AfterFunc(d, func() { v.e.Send(pid, msg) })
}

// opCtx bounds one store operation by OpTimeout (real time).
func (v *env) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, v.cfg.OpTimeout)
}

// readBackCtx bounds the read that confirms a failed renewal: OpTimeout,
// but at most the renewal retry delay (LeaseDuration/12), so that against a
// store that hangs a renewal attempt costs OpTimeout plus a quarter
// heartbeat, not 2 x OpTimeout (docs/protocol.md, "Sessions").
func (v *env) readBackCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, min(v.cfg.OpTimeout, renewRetryDelay(v.cfg.LeaseDuration)))
}

// nowMs is the clock's wall time in ms since the Unix epoch.
func (v *env) nowMs() int64 { return v.clk.Now().UnixMilli() }

// fatalIf latches err when it is Fatal and reports whether it was.
func (v *env) fatalIf(err error) bool {
	if coordination.KindOf(err) == coordination.Fatal {
		v.failNow(err)
		return true
	}
	return false
}

// stopTimer stops t if set.
func stopTimer(t *clock.Timer) {
	if t != nil {
		t.Stop()
	}
}
