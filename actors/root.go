package actors

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/messages"
)

// rootActor is the coordinator actor: it owns the tenancy registry
// (tenancy.go), the one record of which tenancies this worker holds, and
// announces its changes; it tells the revoke actor which held tenancies to
// follow and whether the assignment names them (follow.go); it is the only
// writer of seam events into the outbox, where it enforces the event
// ordering rules (and copies each event to the user's actors that
// subscribed, subscribe.go); it hands each started tenancy's progress record to the
// commit writer (OpenCell), which closes it on the tenancy's TenancyEnded.
// It routes handle commands (Fail, Release, Depart go to the split-writer
// actor in SurrenderTenancies, which answers the original requester;
// commits go to the commit writer, see commitwriter.go) and never does
// store I/O.
type rootActor struct {
	v   *worker.Env
	log *slog.Logger

	reg         registry
	session     string                        // this worker's session's nonce, as the lease last told (Env.Nonce, then SessionStarted)
	fp          uint64                        // H(the job's fingerprint), from StartJob: each OpenCell carries it
	quarantined map[coordination.SplitID]bool // Quarantined emitted (E5)
	subs        subscribers                   // user's actors copied on every event (subscribe.go)
	verdict     bool
	departing   bool

	// The other inputs of the revocation rules (follow.go), as assign and
	// the watch last told them.
	decided  bool                          // an assignment record is known (AssignedSetChanged)
	assigned map[coordination.SplitID]bool // the assigned set (AssignedSetChanged)
	live     bool                          // both watches are live (WatchesChanged)

	sessionLive bool // a session is live: from SessionStarted until SessionEnded (the lease's fact, published for Healthy)

	// Depart in progress.
	departReply   *actor.PID
	departErr     error
	departPending int
	departSplits  []coordination.SplitID // being handed back
	departHanded  bool                   // the hand-backs answered
	departTimer   *time.Timer
}

// departDeadline fires when Depart's own bound is about to pass.
type departDeadline struct{}

func newRoot(v *worker.Env) actor.Producer {
	return func() actor.Receiver {
		return &rootActor{
			v:           v,
			log:         v.Log.With("actor", "coordinator"),
			reg:         newRegistry(),
			session:     v.Nonce,
			quarantined: map[coordination.SplitID]bool{},
			assigned:    map[coordination.SplitID]bool{},
			subs:        subscribers{},
		}
	}
}

// Receive handles one message.
func (r *rootActor) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized, actor.Started:
	case actor.Stopped:
		if r.departTimer != nil {
			r.departTimer.Stop()
		}
	case wire.StartJob: // from the handle (Start)
		// The lease comes last: it starts the startup I/O, so every other
		// actor has JobStarted in its inbox before anything startup causes.
		p := r.v.PIDs
		r.fp = protocol.Fingerprint(m.Fingerprint)
		r.v.Tell(wire.JobStarted{Planner: m.Planner, Fingerprint: m.Fingerprint, FP: r.fp}, p.Watch, p.Leader, p.SplitWriter, p.Lease)
	case messages.FailSplit: // from the handle, or a user's actor
		r.failSplit(c, m)
	case messages.ReleaseSplits: // from the handle, or a user's actor
		r.release(c, m)
	case messages.Subscribe: // from a user's actor
		r.subscribe(c, m)
	case messages.Unsubscribe: // from a user's actor
		r.unsubscribe(c, m)
	case messages.DeclineRevoke: // from a user's actor (Coordinator.PID)
		m.ReplyTo = replyTo(c, m.ReplyTo)
		r.v.Tell(m, r.v.PIDs.Revoke)
	case wire.ForceRevocation: // from revoke
		if r.reg.holds(m.Split, m.Epoch) {
			r.surrender(c, wire.SurrenderTenancies{Tenancies: []wire.HeldSplit{{Split: m.Split, Epoch: m.Epoch}}, Reason: wire.EndRevoked})
		}
		if m.ReplyTo != nil {
			// A decline: the tenancy is surrendered (its Lost is in the
			// outbox) or ended another way; the hand-back settles the
			// revocation in the revoke actor (docs/architecture.md, "Hops").
			r.v.Reply(m.ReplyTo, messages.DeclineRevokeReply{Split: m.Split})
		}
	case recordmsg.ClaimWon: // from the split writer
		r.claimWon(c, m)
	case wire.EndTenancy: // from the split writer or the commit writer
		if r.reg.holds(m.Split, m.Epoch) {
			r.surrender(c, wire.SurrenderTenancies{Tenancies: []wire.HeldSplit{{Split: m.Split, Epoch: m.Epoch}}, Reason: m.Reason})
		}
	case wire.SessionEnded: // from the lease
		r.sessionLive = false
		r.v.Outbox.SetLive(r.sessionLive, r.live)
		if r.reg.len() > 0 {
			r.surrender(c, wire.SurrenderTenancies{Tenancies: r.held(), Reason: wire.EndStarved})
		}
	case wire.SessionStarted: // from the lease (also for the first session, at join)
		r.session, r.sessionLive = m.Nonce, true
		r.v.Outbox.SetLive(r.sessionLive, r.live)
	case worker.RemainingReported: // from the handle (ReportRemaining)
		if r.reg.holds(m.Split, m.Epoch) { // the lease's next presence renewal carries the largest
			r.v.Tell(m, r.v.PIDs.Lease)
		}
	case wire.SplitQuarantined: // from the split writer
		r.splitQuarantined(m)
	case wire.RevocationRequested: // from revoke
		if r.reg.holds(m.Split, m.Epoch) && !r.verdict && !r.departing {
			r.emit(coordination.RevokeRequested{Split: m.Split})
		}
	case wire.AssignedSetChanged: // from assign
		r.assignedSetChanged(m)
	case wire.WatchesChanged: // from the watch
		r.live = m.Live
		r.v.Outbox.SetLive(r.sessionLive, r.live)
		r.followAll()
	case wire.CutRequested: // from the commit writer
		r.emit(m.Event)
	case wire.VerdictReached: // from the split writer
		r.verdictReached(m)
	case wire.DepartJob: // from the handle
		r.depart(c, m)
	case departDeadline:
		r.departTimedOut(c)
	case wire.SurrenderTenanciesReply: // from the split writer (Depart)
		r.departHandedBack(c, m)
	case wire.StepDownReply, wire.WithdrawPresenceReply: // from the leader, the lease (Depart)
		r.departStepped(c)
	default:
		r.log.Warn("unknown message", "type", fmt.Sprintf("%T", m))
	}
}

// splitQuarantined emits Quarantined once per split, unless the verdict
// came first.
func (r *rootActor) splitQuarantined(m wire.SplitQuarantined) {
	if !r.quarantined[m.Split] && !r.verdict {
		r.quarantined[m.Split] = true
		r.v.Metrics.Quarantined()
		r.emit(coordination.Quarantined{Split: m.Split, Attempts: m.Attempts})
	}
}

// verdictReached emits the job's verdict once and tells the actors that
// stop at it.
func (r *rootActor) verdictReached(m wire.VerdictReached) {
	if r.verdict || r.departing {
		return
	}
	r.verdict = true
	if m.Stalled {
		r.emit(coordination.Stalled{Completed: m.Completed, Quarantined: m.Quarantined})
	} else {
		r.emit(coordination.AllComplete{})
	}
	r.v.Tell(m, r.v.PIDs.Leader)
}

// surrender ends the held tenancies m lists for m.Reason (end) and then
// tells the split writer m, which applies the ends and makes the write
// each calls for.
func (r *rootActor) surrender(c *actor.Context, m wire.SurrenderTenancies) {
	for _, h := range m.Tenancies {
		r.end(c, h.Split, h.Epoch, m.Reason)
	}
	r.v.Tell(m, r.v.PIDs.SplitWriter)
}

// held returns the held tenancies, in split order.
func (r *rootActor) held() []wire.HeldSplit {
	var hs []wire.HeldSplit
	for _, id := range r.reg.splits() {
		e, _ := r.reg.epoch(id)
		hs = append(hs, wire.HeldSplit{Split: id, Epoch: e})
	}
	return hs
}

// end removes a tenancy from the registry, emits Lost for involuntary ends
// (E1, E3) and tells revoke, the commit writer and the lease (surrender
// tells the split writer).
func (r *rootActor) end(c *actor.Context, id coordination.SplitID, epoch uint64, reason wire.EndReason) {
	r.reg.end(id)
	r.v.Metrics.Owned(r.reg.len())
	if reason.Involuntary() {
		if reason != wire.EndRevoked {
			r.v.Metrics.Lost(reason.String())
		}
		if !r.verdict {
			r.emit(coordination.Lost{Split: id})
		}
	}
	ended := wire.TenancyEnded{Split: id, Epoch: epoch, Reason: reason}
	// Revoke first: every write the split writer makes for this end is
	// asked after this send (surrender), so its HandBackResolved reaches
	// revoke after the end.
	r.v.Tell(ended, r.v.PIDs.Revoke)
	r.v.PostCommit(ended) // the commit writer closes the tenancy's progress cell
	// The lease drops the tenancy's estimate, if it has one: it keeps only
	// what the root passed on, and no copy of the registry.
	r.v.Tell(worker.RemainingReported{Split: id, Epoch: epoch}, r.v.PIDs.Lease)
}

func (r *rootActor) claimWon(c *actor.Context, m recordmsg.ClaimWon) {
	id := m.Spec.ID
	if !r.reg.start(id, worker.Tenancy{Epoch: m.Epoch, Nonce: m.Nonce}) {
		r.log.Warn("claim won for a split already held; ignoring", "split", id, "epoch", m.Epoch)
		return
	}
	r.v.Metrics.Owned(r.reg.len())
	r.v.Tell(wire.TenancyStarted{Split: id, Epoch: m.Epoch, Nonce: m.Nonce}, r.v.PIDs.SplitWriter)
	r.follow(id)
	if r.departing || r.verdict {
		// Depart already handed back what was held: give this one back too.
		r.surrender(c, wire.SurrenderTenancies{Tenancies: []wire.HeldSplit{{Split: id, Epoch: m.Epoch}}, Reason: wire.EndDeparted})
		return
	}
	r.v.PostCommit(worker.OpenCell{FP: r.fp, Split: id, Epoch: m.Epoch, Prog: m.Fence, Rev: m.FenceRev, Generation: m.Generation})
	// A cut split is read from its primary's descriptor (docs/protocol.md,
	// "Runtime split").
	spec := m.Spec
	spec.Descriptor = gainedDescriptor(m.Fence.DescriptorOr(spec.Descriptor))
	r.emit(coordination.Gained{Split: spec, Epoch: coordination.LeaseEpoch(m.Epoch), Progress: m.Fence.Progress()})
}

// gainedDescriptor is the descriptor a Gained carries: d copied, an empty
// one as nil (coordination.SplitSpec).
func gainedDescriptor(d []byte) []byte {
	if len(d) == 0 {
		return nil
	}
	return append([]byte{}, d...)
}

// replyTo is where a command's reply goes: its ReplyTo, or else its
// sender (messages, "One reply per command").
func replyTo(c *actor.Context, pid *actor.PID) *actor.PID {
	if pid != nil {
		return pid
	}
	return c.Sender()
}

func (r *rootActor) failSplit(c *actor.Context, m messages.FailSplit) {
	to := replyTo(c, m.ReplyTo)
	epoch := uint64(m.Epoch)
	if err := r.v.Outbox.Failure(); err != nil {
		r.v.Reply(to, messages.FailSplitReply{Split: m.Split, Err: err})
		return
	}
	e, ok := r.reg.epoch(m.Split)
	if !ok {
		r.v.Reply(to, messages.FailSplitReply{Split: m.Split, Err: worker.NotHeld(m.Split)})
		return
	}
	if e != epoch {
		r.v.Reply(to, messages.FailSplitReply{Split: m.Split, Err: worker.EpochNotHeld(m.Split, epoch, e)})
		return
	}
	r.v.Metrics.Failed()
	r.surrender(c, wire.SurrenderTenancies{Tenancies: []wire.HeldSplit{{Split: m.Split, Epoch: e}}, Reason: wire.EndFailed, Failure: m.Reason, ReplyTo: to})
}

func (r *rootActor) release(c *actor.Context, m messages.ReleaseSplits) {
	to := replyTo(c, m.ReplyTo)
	if err := r.v.Outbox.Failure(); err != nil {
		r.v.Reply(to, messages.ReleaseSplitsReply{Err: err})
		return
	}
	reason := wire.EndReleased
	if m.Drained {
		reason = wire.EndDrained
	}
	var hs []wire.HeldSplit
	for _, t := range m.Tenancies {
		if e := uint64(t.Epoch); r.reg.holds(t.Split, e) {
			r.end(c, t.Split, e, reason)
			hs = append(hs, wire.HeldSplit{Split: t.Split, Epoch: e})
		}
	}
	if len(hs) == 0 {
		r.v.Reply(to, messages.ReleaseSplitsReply{})
		return
	}
	r.v.Tell(wire.SurrenderTenancies{Tenancies: hs, Reason: reason, ReplyTo: to}, r.v.PIDs.SplitWriter)
}
