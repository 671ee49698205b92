package actors

import (
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination/messages"
)

// Depart at the root (docs/protocol.md, "Departure"): end and hand back
// every held tenancy, then demote and withdraw the presence key, answering
// the handle once both confirmed or Depart's own bound is about to pass.

func (r *root) depart(c *actor.Context, m messages.DepartJob) {
	r.departing = true
	r.publish(messages.Departing{})
	if r.v.out.failure() != nil {
		var hs []messages.HeldSplit
		for _, id := range m.Held {
			if e, ok := r.reg.epoch(id); ok {
				hs = append(hs, messages.HeldSplit{Split: id, Epoch: e})
			}
		}
		c.Respond(messages.DepartJobReply{Err: r.v.out.failure(), Failed: true, Held: hs})
		return
	}
	r.departReply = c.Sender()
	v, pid := r.v, c.PID()
	r.departTimer = time.AfterFunc(2*r.v.cfg.OpTimeout, func() { v.send(pid, departDeadline{}) })
	var hs []messages.HeldSplit
	for _, id := range r.reg.splits() {
		e, _ := r.reg.epoch(id)
		hs = append(hs, messages.HeldSplit{Split: id, Epoch: e})
		r.departSplits = append(r.departSplits, id)
	}
	for _, h := range hs {
		r.end(c, h.Split, h.Epoch, messages.EndDeparted)
	}
	// The commit actor answers HandBackSplitsReply to the root, which then
	// demotes and withdraws presence (docs/protocol.md, "Departure").
	r.publish(messages.HandBackSplits{Splits: hs, Reason: messages.EndDeparted, ReplyTo: c.PID()})
}

// departTimedOut answers Depart within its bound with what is known:
// splits whose hand-back has not answered yet did not confirm.
func (r *root) departTimedOut(c *actor.Context) {
	if r.departReply == nil {
		return
	}
	if !r.departHanded && len(r.departSplits) > 0 {
		r.departErr = handBackUnconfirmed(r.departSplits)
	}
	c.Engine().Send(r.departReply, messages.DepartJobReply{Err: r.departErr})
	r.departReply = nil
}

// departHandedBack takes the hand-backs' answer and starts the demotion
// and the presence withdrawal.
func (r *root) departHandedBack(c *actor.Context, m messages.HandBackSplitsReply) {
	if r.departReply == nil {
		return
	}
	r.departHanded = true
	if len(m.Unconfirmed) > 0 {
		r.departErr = handBackUnconfirmed(m.Unconfirmed)
	}
	r.departPending = 2
	r.publish(messages.StepDown{ReplyTo: c.PID()})
	r.publish(messages.WithdrawPresence{ReplyTo: c.PID()})
}

// departStepped counts one of the demotion and the withdrawal done and
// answers Depart after both.
func (r *root) departStepped(c *actor.Context) {
	r.departPending--
	if r.departPending == 0 && r.departReply != nil {
		c.Engine().Send(r.departReply, messages.DepartJobReply{Err: r.departErr})
		r.departReply = nil
		r.departTimer.Stop()
	}
}
