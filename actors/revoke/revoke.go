package revoke

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/messages"
)

// revokeActor drives each revocation to exactly one outcome: drained, forced or
// cancelled (docs/protocol.md, "Revocation"), including the silence watchdog of a cancelled drain.
// It keeps only the drains in progress: which tenancies are held, whether
// the assignment names them and whether the rules apply are the split
// writer's to tell (it owns the held tenancies), in the FollowAssignment
// that asks it to act on them. It tells the split writer each revocation
// it requested or forced (RevocationChanged); a DeclineRevoke it forces is
// answered by the root once the tenancy's Lost is queued, or by the split
// writer when it ended another way (RevocationChanged.ReplyTo), one it
// finds nothing to force for here. Its deadlines are its own timer's (arm), at
// the earliest deadline of the drains in progress: a revocation is forced
// at DrainDeadline, not at a peer's tick.
type revokeActor struct {
	v   *worker.Env
	log *slog.Logger

	entries map[coordination.SplitID]*revocation // the drains in progress
	timer   *clock.Timer                         // fires deadlineDue at the earliest deadline of entries; nil when none
}

// deadlineDue is the revoke actor's timer: the earliest drain deadline it
// was armed for passed.
type deadlineDue struct{}

// New returns the producer of worker v's revocation-drain actor.
func New(v *worker.Env) actor.Producer {
	return func() actor.Receiver {
		return &revokeActor{
			v:       v,
			log:     v.Log.With("actor", "revoke"),
			entries: map[coordination.SplitID]*revocation{},
		}
	}
}

// Receive handles one message.
func (r *revokeActor) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized, actor.Started:
	case actor.Stopped:
		worker.StopTimer(r.timer)
	case wire.FollowAssignment: // from the split writer
		now := r.v.Clock.Now()
		for _, t := range m.Tenancies {
			r.follow(t, now)
		}
		r.deadlines(c)
	case deadlineDue:
		if !r.v.Halted() { // failed or aborted: nothing more is forced
			r.deadlines(c)
		}
	case wire.TenancyEnded: // from the split writer
		e, ok := r.entries[m.Split]
		if !ok || e.epoch != m.Epoch {
			break
		}
		if m.Reason == wire.EndFenced || m.Reason == wire.EndStarved {
			// No hand-back follows these ends: settle here.
			r.settle(m.Split, e, "forced")
		} else {
			e.ended = true // its hand-back's outcome settles it
		}
	case wire.CommitLanded: // from the commit writer
		if e, ok := r.entries[m.Split]; ok && e.epoch == m.Epoch {
			e.lastProgress = r.v.Clock.Now()
		}
	case wire.HandBackResolved: // from the split writer, always after the tenancy's TenancyEnded
		r.resolved(m)
	case messages.DeclineRevoke: // from the handle, or the root (a user's actor's)
		r.decline(c, m)
	default:
		r.log.Warn("unknown message", "type", fmt.Sprintf("%T", m))
	}
}

// follow applies the revocation rules (docs/protocol.md, "Following the
// assignment") to one held tenancy, as the split writer told it.
func (r *revokeActor) follow(t wire.FollowedTenancy, now time.Time) {
	id := t.Split
	e := r.entries[id]
	if e != nil && e.epoch != t.Epoch {
		delete(r.entries, id)
		e = nil
	}
	switch decideRevocation(t.Assigned, e) {
	case revokeCancel:
		e.cancelled, e.lastProgress = true, now
		r.v.Metrics.Revocation("cancelled")
	case revokeRequest:
		if e == nil {
			e = &revocation{epoch: t.Epoch, started: now}
			r.entries[id] = e
		}
		e.cancelled, e.lastProgress = false, now
		r.v.Metrics.Revocation("requested")
		r.log.Debug("drain started", "split", id)
		r.v.Tell(wire.RevocationChanged{Split: id, Epoch: t.Epoch}, r.v.PIDs.SplitWriter)
	}
}

// deadlines forces every revocation whose drain deadline passed, and hands
// back every cancelled one that stayed silent for a full DrainDeadline;
// then it arms the timer for the next deadline.
func (r *revokeActor) deadlines(c *actor.Context) {
	now := r.v.Clock.Now()
	for id, e := range r.entries {
		switch judgeDeadline(*e, now, r.v.Config.DrainDeadline) {
		case deadlineForced:
			r.log.Warn("drain deadline passed; forcing hand-back (uncommitted records will replay)", "split", id)
			r.settle(id, e, "forced")
			r.v.Tell(wire.RevocationChanged{Split: id, Epoch: e.epoch, Forced: true}, r.v.PIDs.SplitWriter)
		case deadlineSilent:
			r.log.Warn("cancelled revocation silent for a full DrainDeadline; handing split back", "split", id)
			r.settle(id, e, "")
			r.v.Tell(wire.RevocationChanged{Split: id, Epoch: e.epoch, Forced: true}, r.v.PIDs.SplitWriter)
		}
	}
	r.v.Metrics.Draining(len(r.entries))
	r.arm(c)
}

// arm sets the timer to the earliest deadline of the drains in progress,
// or leaves it stopped when none is left. A deadline only moves later
// without a call here (a commit landed: the timer fires early and arms
// again); it moves earlier only at a FollowAssignment, which calls
// deadlines.
func (r *revokeActor) arm(c *actor.Context) {
	worker.StopTimer(r.timer)
	r.timer = nil
	var next time.Time
	for _, e := range r.entries {
		if at := deadlineAt(*e, r.v.Config.DrainDeadline); next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if !next.IsZero() {
		r.timer = r.v.After(next.Sub(r.v.Clock.Now()), c.PID(), deadlineDue{})
	}
}

// settle removes an entry and counts its outcome ("" counts none).
func (r *revokeActor) settle(id coordination.SplitID, e *revocation, outcome string) {
	delete(r.entries, id)
	if outcome != "" && !e.cancelled {
		r.v.Metrics.Revocation(outcome)
		if outcome == "drained" {
			r.v.Metrics.Drained(r.v.Clock.Since(e.started))
			r.log.Debug("drain finished", "split", id)
		}
	}
	r.v.Metrics.Draining(len(r.entries))
}

// resolved settles an entry from the outcome of its hand-back (docs/protocol.md, "Revocation").
func (r *revokeActor) resolved(m wire.HandBackResolved) {
	outcome := judgeResolution(m.Reason, m.Outcome)
	e, ok := r.entries[m.Split]
	if !ok || e.epoch != m.Epoch {
		return
	}
	r.settle(m.Split, e, outcome)
}

func (r *revokeActor) decline(c *actor.Context, m messages.DeclineRevoke) {
	if m.ReplyTo == nil {
		m.ReplyTo = c.Sender() // the handle's request
	}
	if err := r.v.Failure(); err != nil {
		r.v.Reply(m.ReplyTo, messages.DeclineRevokeReply{Split: m.Split, Err: err})
		return
	}
	e, ok := r.entries[m.Split]
	switch {
	case !ok:
	case e.epoch != uint64(m.Epoch):
		ok = false // the entry is for a tenancy the driver has not polled
	case e.ended:
		// The split writer already ended the tenancy (its TenancyEnded came
		// first): the hand-back's outcome settles the entry, and nothing
		// is left to force (a forced hand-back would never be answered).
		r.v.Reply(m.ReplyTo, messages.DeclineRevokeReply{Split: m.Split})
		return
	}
	if !ok || e.cancelled {
		if ok {
			delete(r.entries, m.Split)
			r.v.Metrics.Draining(len(r.entries))
		}
		r.v.Reply(m.ReplyTo, messages.DeclineRevokeReply{Split: m.Split})
		return
	}
	r.settle(m.Split, e, "forced")
	r.v.Tell(wire.RevocationChanged{Split: m.Split, Epoch: e.epoch, Forced: true, ReplyTo: m.ReplyTo}, r.v.PIDs.SplitWriter)
}
