package worker

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// PIDs names the actors of one worker: what each is given at spawn to
// reach its peers. Spawn sets them (NewPIDs) before it spawns any actor;
// read-only afterwards.
type PIDs struct {
	Root, Watch, Lease, Leader, SplitWriter, Revoke *actor.PID
}

// NewPIDs returns the PIDs the actors of the worker named name get on
// engine e, before any is spawned: hollywood names a process kind/id, and
// Spawn spawns each with kind Kind(...) and id name.
func NewPIDs(e *actor.Engine, name string) PIDs {
	at := func(kind string) *actor.PID { return actor.NewPID(e.Address(), Kind(kind)+"/"+name) }
	return PIDs{
		Root: at("coordinator"), Watch: at("watch"), Lease: at("lease"), Leader: at("leader"),
		SplitWriter: at("splitwriter"), Revoke: at("revoke"),
	}
}

// Kind is the engine kind of the actor named kind ("lease").
func Kind(kind string) string { return "coordination-" + kind }

// Env is what every part of one worker is given at spawn, and only
// immutable things (docs/architecture.md, "What `worker.Env` holds"):
// configuration, the engine, the store handles, clock, logger, metrics, the
// PIDs of its peers, the commit writer's inbox, the failure latch (a handle
// whose state only ever goes from not fired to fired) and the worker's
// lifetime (Ctx, Cancel, WG). Spawn (and a test's constructor) sets every
// field before any actor runs; nothing writes one after. What an actor
// decides is its own, told to the others by message; the one structure
// the root shares with the handle, the outbox, is given to those two alone.
// TestEnvHoldsOnlyImmutableThings (actors/env_test.go) checks it.
type Env struct {
	Engine *actor.Engine       // the engine the worker's actors run on
	Raw    store.Store         // the store as given (direct hand-back after failure)
	Store  store.Store         // Raw wrapped (GuardedStore): refuses writes once Latch fired
	Config coordination.Config // validated, InstanceID and Clock resolved
	Clock  clock.Clock         // Config.Clock
	ID     string              // the instance id (Config.InstanceID, or generated)
	// Nonce is the first session's nonce (docs/protocol.md, "Sessions").
	// The current session's is the lease actor's; the actors that act on
	// it learn a new one from SessionChanged.
	Nonce    string
	Log      *slog.Logger // Config.Logger with the instance id
	Metrics  *Metrics     // the worker's metrics on Config.Metrics
	PIDs     PIDs         // given to every actor at spawn (NewPIDs); never written after
	ValueCap int          // the store's value cap, 0 = none

	// Latch latches the worker's failure (Fail) or its Abort: once fired
	// the guarded store refuses every write and every loop stops (latch.go).
	Latch Latch

	// Backlog is the credit of the watch hand-off (backlog.go): flow
	// control shared by the watch's pumps and every receiving actor's
	// middleware, not a fact any actor decides.
	Backlog *Backlog

	Commits commitDesk // the commit writer's inbox (actors/commitwriter), set by Spawn before any actor

	// Ctx, Cancel and WG are the worker's lifetime: Ctx ends at Depart's
	// end or Abort (Cancel), and WG counts the goroutines Go started.
	Ctx    context.Context
	Cancel context.CancelFunc
	WG     *sync.WaitGroup
}

// Halted reports whether the worker halted (failed or aborted): no
// further writes.
func (v *Env) Halted() bool { return v.Latch.Halted() }

// Failure returns the latched failure (ErrAborted after Abort), or nil.
func (v *Env) Failure() error { return v.Latch.Failure() }

// Go runs f on a goroutine owned by the worker: registered with the
// WaitGroup, recovering a panic into a Fatal failure.
func (v *Env) Go(f func(ctx context.Context)) {
	v.WG.Go(func() {
		defer v.recoverPanic()
		f(v.Ctx)
	})
}

// recoverPanic turns a panic into a latched Fatal `internal error`.
func (v *Env) recoverPanic() {
	if r := recover(); r != nil {
		v.Log.Error("internal error", "err", fmt.Sprint(r), "stack", string(debug.Stack()))
		v.Fail(coordination.Errorf(coordination.Fatal, "internal error: %v", r))
	}
}

// Fail latches err (the first failure wins) and halts writes. Safe from
// any goroutine.
func (v *Env) Fail(err error) { v.Latch.Fire(err) }

// FailNow latches a Fatal condition at once, so that a call answered
// after it already sees the failure, and logs that the coordinator failed
// without the reason: every later call returns the error, and its caller
// (driver.Run) reports it, so the text is printed once.
func (v *Env) FailNow(err error) {
	if v.Failure() == nil {
		v.Log.Error("coordinator failed; every later call returns the failure (driver.Run returns it)")
		v.Log.Debug("coordinator failure", "err", err)
	}
	v.Fail(err)
}

// Send delivers msg to pid, from an actor, one of its goroutines or the
// handle. Once the worker shuts down (only shutdown ends v.ctx) nothing is
// delivered: such a report answers work the shutdown cut short ("context
// canceled"), and an actor taking it for a store fault would log a warning
// for a clean stop.
func (v *Env) Send(pid *actor.PID, msg any) {
	if v.Ctx.Err() != nil {
		return
	}
	v.Engine.Send(pid, msg)
}

// After arms a clock timer that sends msg to pid.
func (v *Env) After(d time.Duration, pid *actor.PID, msg any) *clock.Timer {
	return v.Clock.AfterFunc(d, func() { v.Engine.Send(pid, msg) })
}

// OpCtx bounds one store operation by OpTimeout (real time).
func (v *Env) OpCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, v.Config.OpTimeout)
}

// ReadBackCtx bounds the read that confirms a failed renewal: OpTimeout,
// but at most the renewal retry delay (LeaseDuration/12), so that against a
// store that hangs a renewal attempt costs OpTimeout plus a quarter
// heartbeat, not 2 x OpTimeout (docs/protocol.md, "Sessions").
func (v *Env) ReadBackCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, min(v.Config.OpTimeout, RenewRetryDelay(v.Config.LeaseDuration)))
}

// NowMs is the clock's wall time in ms since the Unix epoch.
func (v *Env) NowMs() int64 { return v.Clock.Now().UnixMilli() }

// FatalIf latches err when it is Fatal and reports whether it was.
func (v *Env) FatalIf(err error) bool {
	if coordination.KindOf(err) == coordination.Fatal {
		v.FailNow(err)
		return true
	}
	return false
}

// StopTimer stops t if set.
func StopTimer(t *clock.Timer) {
	if t != nil {
		t.Stop()
	}
}
