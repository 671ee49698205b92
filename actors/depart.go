package actors

import (
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/messages"
)

// Depart (docs/protocol.md, "Departure"): the root ends every held
// tenancy and the split-writer actor hands them back and returns this session's
// leftovers; then the root demotes and withdraws the presence key,
// answering the handle once both confirmed or Depart's own bound is about
// to pass.

func (r *rootActor) depart(c *actor.Context, m messages.DepartJob) {
	r.departing = true
	r.v.Route(worker.RoleRoot, messages.Departing{})
	if r.v.Outbox.Failure() != nil {
		var hs []messages.HeldSplit
		for _, id := range m.Held {
			if e, ok := r.reg.epoch(id); ok {
				hs = append(hs, messages.HeldSplit{Split: id, Epoch: e})
			}
		}
		r.v.Reply(c.Sender(), messages.DepartJobReply{Err: r.v.Outbox.Failure(), Failed: true, Held: hs})
		return
	}
	r.departReply = c.Sender()
	v, pid := r.v, c.PID()
	r.departTimer = time.AfterFunc(2*r.v.Config.OpTimeout, func() { v.Send(pid, departDeadline{}) })
	var hs []messages.HeldSplit
	for _, id := range r.reg.splits() {
		e, _ := r.reg.epoch(id)
		hs = append(hs, messages.HeldSplit{Split: id, Epoch: e})
		r.departSplits = append(r.departSplits, id)
	}
	for _, h := range hs {
		r.end(c, h.Split, h.Epoch, messages.EndDeparted)
	}
	// The split-writer actor hands back the held splits and returns this
	// session's leftovers, then answers HandBackSplitsReply to the root,
	// which demotes and withdraws presence (docs/protocol.md, "Departure").
	r.v.Route(worker.RoleRoot, messages.HandBackSplits{Splits: hs, Reason: messages.EndDeparted, ReplyTo: c.PID(), Leftovers: true})
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
	r.v.Reply(r.departReply, messages.DepartJobReply{Err: r.departErr})
	r.departReply = nil
}

// departHandedBack takes the hand-backs' answer and starts the demotion
// and the presence withdrawal.
func (r *rootActor) departHandedBack(c *actor.Context, m messages.HandBackSplitsReply) {
	if r.departReply == nil {
		return
	}
	r.departHanded = true
	if len(m.Unconfirmed) > 0 {
		r.departErr = worker.HandBackUnconfirmed(m.Unconfirmed)
	}
	r.departPending = 2
	r.v.Route(worker.RoleRoot, messages.StepDown{ReplyTo: c.PID()})
	r.v.Route(worker.RoleRoot, messages.WithdrawPresence{ReplyTo: c.PID()})
}

// departStepped counts one of the demotion and the withdrawal done and
// answers Depart after both.
func (r *rootActor) departStepped(c *actor.Context) {
	r.departPending--
	if r.departPending == 0 && r.departReply != nil {
		r.v.Reply(r.departReply, messages.DepartJobReply{Err: r.departErr})
		r.departReply = nil
		r.departTimer.Stop()
	}
}

// departLeftovers returns the writes that hand back, in Depart's batch,
// every split record the split-writer actor's view shows naming this session
// that this worker does not hold: a claim whose reply was lost (or a
// hand-back that did not confirm) left it (docs/protocol.md, "Departure").
// Without them the next claimant would find a record of an ended session
// and take it over as Expired, charging an attempt. held are the splits
// the batch hands back anyway. Each write re-checks the view when it
// starts, after any earlier write on its split.
func (sw *splitWriterActor) departLeftovers(held []messages.HeldSplit, batch uint64, deadline time.Time) []splitOp {
	skip := make(map[coordination.SplitID]bool, len(held))
	for _, h := range held {
		skip[h.Split] = true
	}
	var ops []splitOp
	for id, r := range sw.records {
		if !skip[id] && sw.isLeftover(id, r.Rec) {
			ops = append(ops, departLeftoverOp{split: id, batch: batch, deadline: deadline})
		}
	}
	return ops
}

// isLeftover reports whether rec, split id's record, is a leftover of this
// session: runnable, naming this worker and its current session, not held.
func (sw *splitWriterActor) isLeftover(id coordination.SplitID, rec protocol.SplitRecord) bool {
	_, held := sw.held[id]
	return !held && rec.Status == protocol.StatusRunnable && rec.Owner == sw.v.ID && rec.Nonce == sw.v.SessionNonce()
}

// departLeftoverResult applies the outcome of a leftover's return. A
// return that does not confirm is not Depart's error (the caller never
// held the split): the record stays a leftover, taken as Expired once the
// session ended, as before.
func (sw *splitWriterActor) departLeftoverResult(op departLeftoverOp, d splitWritten) {
	switch d.Outcome {
	case worker.CASLanded:
		sw.log.Debug("leftover of this session handed back on departure", "split", op.split, "epoch", op.epoch)
	case worker.CASFatal:
		sw.v.FailNow(d.Err)
	case worker.CASUnconfirmed:
		sw.log.Warn("leftover of this session was not handed back on departure; its next claimant is charged an attempt", "split", op.split, "err", d.Err)
	}
	sw.settleBatch(op.batch, op.split, messages.EndDeparted, false)
}
