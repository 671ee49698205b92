package worker

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

// PIDs names the actors of one worker: what each is given at spawn to
// reach its peers. Spawn sets them (NewPIDs) before it spawns any actor;
// read-only afterwards.
type PIDs struct {
	Root, Watch, Lease, Leader, Assign, SplitWriter, Revoke *actor.PID
}

// NewPIDs returns the PIDs the actors of the worker named name get on
// engine e, before any is spawned: hollywood names a process kind/id, and
// Spawn spawns each with kind Kind(...) and id name.
func NewPIDs(e *actor.Engine, name string) PIDs {
	at := func(kind string) *actor.PID { return actor.NewPID(e.Address(), Kind(kind)+"/"+name) }
	return PIDs{
		Root: at("coordinator"), Watch: at("watch"), Lease: at("lease"), Leader: at("leader"),
		Assign: at("assign"), SplitWriter: at("splitwriter"), Revoke: at("revoke"),
	}
}

// Kind is the engine kind of the actor named kind ("lease").
func Kind(kind string) string { return "coordination-" + kind }

// Env is what every actor of one worker shares: immutable configuration,
// the engine, the store, and the goroutine group. Nothing mutable except the
// WaitGroup and the atomics, which are safe for concurrent use.
type Env struct {
	Engine *actor.Engine
	Raw    store.Store // the store as given (direct hand-back after failure)
	Store  store.Store // raw wrapped: refuses writes once halted
	Config coordination.Config
	Clock  clock.Clock
	ID     string
	// Nonce is the first session's nonce (docs/protocol.md, "Sessions").
	// The current session's is the lease actor's; the actors that act on
	// it learn a new one from SessionChanged.
	Nonce   string
	Log     *slog.Logger
	Metrics *Metrics
	// Outbox is the seam events for the driver: the root alone pushes them
	// (the commit writer's cut requests reach it as wire.CutRequested), the
	// handle takes them; Fail latches its failure from any goroutine (the
	// failure is a latch, like Halted, not an event).
	Outbox   *Outbox
	PIDs     PIDs // given to every actor at spawn (NewPIDs); never written after
	ValueCap int  // the store's value cap, 0 = none

	Backlog backlog // the credit of the watch hand-off (backlog.go)

	Commits commitDesk // the commit writer (actors/commitwriter), set by Spawn before any actor

	Ctx    context.Context // cancelled at Depart's end or Abort
	Cancel context.CancelFunc
	WG     sync.WaitGroup
	// Halted latches "no further writes" (failed or aborted), only ever
	// false to true: Fail (any goroutine: a failure anywhere halts the
	// worker) and the handle's Abort set it, and the guarded store and
	// every loop read it, so a write cannot slip out after a failure while
	// a message is in flight. A latch, not a message: a message would
	// arrive behind the writes already queued.
	Halted atomic.Bool
}

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

// Fail latches err (the first Fatal wins) and halts writes. Safe from any
// goroutine.
func (v *Env) Fail(err error) {
	v.Halted.Store(true)
	v.Outbox.fail(err)
}

// FailNow latches a Fatal condition at once, so that a call answered
// after it already sees the failure, and logs that the coordinator failed
// without the reason: every later call returns the error, and its caller
// (driver.Run) reports it, so the text is printed once.
func (v *Env) FailNow(err error) {
	if v.Outbox.Failure() == nil {
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
