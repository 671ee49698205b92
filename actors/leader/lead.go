package leader

import (
	"context"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"
	"github.com/spate-go/coordination/actors/internal/worker"
)

// lead is one leadership as the work done under it sees it (docs/protocol.md,
// "Leadership"), in the manner of client-go's OnStartedLeading context: its
// ctx ends when the leadership does, and every result of work started under
// it comes back in a leadResult that the leader actor opens only while the
// lead lasts. A result of an ended lead is never applied, whatever it says,
// so no handler compares generations to filter stale results.
//
// The election holds one lead per won leader key (the fence and the renewals
// run under it) and hands a child lead to the planner run and the publisher
// once the generation fence landed; the child also ends when the worker stops
// working as leader while it still holds the key (verdict, Depart).
type lead struct {
	ctx    context.Context // cancelled by end; store I/O under the lead uses it
	cancel context.CancelFunc
	gen    uint64 // the leader generation
}

// newLead starts a lead of generation gen that ends with parent.
func newLead(parent context.Context, gen uint64) *lead {
	ctx, cancel := context.WithCancel(parent)
	return &lead{ctx: ctx, cancel: cancel, gen: gen}
}

// child starts a lead of the same generation that ends with d.
func (d *lead) child() *lead { return newLead(d.ctx, d.gen) }

// end ends the lead and every child; safe to call again.
func (d *lead) end() { d.cancel() }

// ended reports whether the lead ended; a nil lead (none held) has.
func (d *lead) ended() bool { return d == nil || d.ctx.Err() != nil }

// leadResult carries msg, the result of work started under lead.
type leadResult struct {
	lead *lead
	msg  any
}

// deliver sends msg under the lead to pid; safe from any goroutine.
func (d *lead) deliver(v *worker.Env, pid *actor.PID, msg any) {
	v.Send(pid, leadResult{lead: d, msg: msg})
}

// goFunc runs f on a worker goroutine with the lead's context and delivers
// its result under the lead to pid.
func (d *lead) goFunc(v *worker.Env, pid *actor.PID, f func(ctx context.Context) any) {
	v.Go(func(context.Context) { d.deliver(v, pid, f(d.ctx)) })
}

// after arms a clock timer that delivers msg under the lead to pid.
func (d *lead) after(v *worker.Env, dur time.Duration, pid *actor.PID, msg any) *clock.Timer {
	return v.Clock.AfterFunc(dur, func() { d.deliver(v, pid, msg) })
}
