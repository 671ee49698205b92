package actors

import (
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
)

// Depart (docs/protocol.md, "Departure"): the root sends it on to the
// split writer, which ends every held tenancy, hands them back and returns
// this worker's leftovers; then the root demotes and withdraws the
// presence key, answering the handle once both confirmed or Depart's own
// bound is about to pass. After a failure the split writer answers the
// handle itself, for the direct hand-back.

func (r *rootActor) depart(c *actor.Context, m wire.DepartJob) {
	r.departing = true
	p := r.v.PIDs
	r.v.Tell(wire.Retire{}, p.Leader)
	r.v.Tell(wire.Departing{}, p.Lease)
	if err := r.v.Failure(); err != nil {
		r.v.Tell(wire.DepartJob{Held: m.Held, ReplyTo: c.Sender(), Failure: err}, p.SplitWriter)
		return
	}
	r.departReply = c.Sender()
	v, pid := r.v, c.PID()
	r.departTimer = time.AfterFunc(2*r.v.Config.OpTimeout, func() { v.Send(pid, departDeadline{}) })
	// The split writer tells the root the ends it hands back
	// (EventsRaised.Departed) and answers DepartHandedBack after the
	// batch, then the root demotes and withdraws presence (docs/protocol.md,
	// "Departure").
	r.v.Tell(wire.DepartJob{ReplyTo: c.PID()}, p.SplitWriter)
}

// departTimedOut answers Depart within its bound with what is known:
// splits whose hand-back has not answered yet did not confirm.
func (r *rootActor) departTimedOut(c *actor.Context) {
	if r.departReply == nil {
		return
	}
	if !r.departHanded && len(r.departSplits) > 0 {
		r.departErr = worker.HandBackUnconfirmed(r.departSplits)
	}
	r.v.Reply(r.departReply, wire.DepartJobReply{Err: r.departErr})
	r.departReply = nil
}

// departHandedBack takes the hand-backs' answer and starts the demotion
// and the presence withdrawal.
func (r *rootActor) departHandedBack(c *actor.Context, m wire.DepartHandedBack) {
	if r.departReply == nil {
		return
	}
	r.departHanded = true
	if len(m.Unconfirmed) > 0 {
		r.departErr = worker.HandBackUnconfirmed(m.Unconfirmed)
	}
	r.departPending = 2
	r.v.Tell(wire.StepDown{ReplyTo: c.PID()}, r.v.PIDs.Leader)
	r.v.Tell(wire.WithdrawPresence{ReplyTo: c.PID()}, r.v.PIDs.Lease)
}

// departStepped counts one of the demotion and the withdrawal done and
// answers Depart after both.
func (r *rootActor) departStepped(c *actor.Context) {
	r.departPending--
	if r.departPending == 0 && r.departReply != nil {
		r.v.Reply(r.departReply, wire.DepartJobReply{Err: r.departErr})
		r.departReply = nil
		r.departTimer.Stop()
	}
}
