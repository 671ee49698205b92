package splitwriter

import (
	"maps"
	"slices"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/messages"
)

// The tenancy registry (docs/architecture.md, "The tenancy registry"):
// which tenancy of a split this worker holds is one fact, and its one
// owner is the split writer, which writes the claims that start tenancies
// and the surrenders that end them. A tenancy starts in the step that
// learns its claim won (no relay) and ends only here: a fence the split
// record shows, a handle command the root sends on (Fail, Release,
// ReleaseDrained, Depart), a forced revocation, the session's end, or an
// EndTenancy of the commit writer (a fenced or completed commit). The
// split writer announces each change once, in the order it applied them:
// the root is raised its Gained and, for an involuntary end, its Lost
// (events.go), revoke is told TenancyEnded, the commit writer
// CellChanged (the cell closes), the lease a 0 estimate.

// registry is the tenancy registry: split → the tenancy held. Owner: the
// split-writer actor.
type registry struct {
	held      map[coordination.SplitID]worker.Tenancy
	lastEpoch map[coordination.SplitID]uint64 // highest epoch ever started (E2)
}

func newRegistry() registry {
	return registry{held: map[coordination.SplitID]worker.Tenancy{}, lastEpoch: map[coordination.SplitID]uint64{}}
}

// holds reports whether tenancy (id, epoch) is held. It is the one place a
// stale end or request (of an earlier tenancy of the split) is filtered by
// epoch.
func (g *registry) holds(id coordination.SplitID, epoch uint64) bool {
	t, ok := g.held[id]
	return ok && t.Epoch == epoch
}

// epoch returns the held tenancy's epoch of id.
func (g *registry) epoch(id coordination.SplitID) (uint64, bool) {
	t, ok := g.held[id]
	return t.Epoch, ok
}

// start registers tenancy t of id; it reports false (and registers
// nothing) when id is held already or t is not newer than every tenancy
// started before.
func (g *registry) start(id coordination.SplitID, t worker.Tenancy) bool {
	if _, ok := g.held[id]; ok || t.Epoch <= g.lastEpoch[id] {
		return false
	}
	g.held[id], g.lastEpoch[id] = t, t.Epoch
	return true
}

// end removes id's tenancy.
func (g *registry) end(id coordination.SplitID) { delete(g.held, id) }

// len returns the number of held tenancies.
func (g *registry) len() int { return len(g.held) }

// list returns the held tenancies, in split order.
func (g *registry) list() []wire.HeldSplit {
	hs := make([]wire.HeldSplit, 0, len(g.held))
	for _, id := range slices.Sorted(maps.Keys(g.held)) {
		hs = append(hs, wire.HeldSplit{Split: id, Epoch: g.held[id].Epoch})
	}
	return hs
}

// surrender is the end of held tenancies for one reason, with what the
// write each end calls for needs: the completion of the split record
// (EndCompleted), the failure (EndFailed, failure its reason, answered
// messages.FailSplitReply to replyTo), a hand-back (EndReleased,
// EndDrained, EndRevoked, EndDeparted; answered once for the batch to
// replyTo, messages.ReleaseSplitsReply or, for EndDeparted,
// wire.DepartHandedBack), none for a fence or a session's end. With
// leftovers (Depart) the batch also returns every leftover of this worker
// the view shows (departReturn, departleftover.go). decline is a
// DeclineRevoke's reply PID (EndRevoked), answered by the root once the
// Lost is queued.
type surrender struct {
	tenancies []wire.HeldSplit
	reason    wire.EndReason
	failure   string
	replyTo   *actor.PID
	leftovers bool
	decline   *actor.PID
}

// claimWon starts the tenancy a won claim d established: the claim's slot
// is freed, the commit writer opens the tenancy's progress cell before the
// root is raised its Gained, revoke is told the tenancy to follow,
// and a split record already showing it fenced ends it after its Gained.
// After the verdict or once Depart began, the tenancy is handed back at
// once and no Gained is emitted.
func (sw *splitWriterActor) claimWon(c *actor.Context, d claimed) {
	id := d.spec.ID
	t := worker.Tenancy{Epoch: d.rec.Epoch, Nonce: d.rec.Nonce}
	if !sw.reg.start(id, t) {
		sw.log.Warn("claim won for a split already held; ignoring", "split", id, "epoch", t.Epoch)
		sw.claims.tenancyStarted(id) // frees the claim's slot
		return
	}
	sw.v.Metrics.Owned(sw.reg.len())
	sw.claims.tenancyStarted(id)
	if sw.departing || sw.verdict {
		// Depart already handed back what was held: give this one back too.
		sw.surrender(c, surrender{tenancies: []wire.HeldSplit{{Split: id, Epoch: t.Epoch}}, reason: wire.EndDeparted})
		return
	}
	sw.v.PostCommit(worker.CellChanged{Split: id, Epoch: t.Epoch, FP: sw.fp, Prog: d.prog, Rev: d.progRev, Generation: d.gen})
	sw.raise(gained(d, t.Epoch))
	sw.follow(id)
	sw.fenceSeen(id)
}

// surrender ends the tenancies s lists, tells the root what it acts on of
// the ends (raiseEnds: Lost for an involuntary one), and asks in the same step for the write each end calls
// for, so the claimer's handing splits are the surrender writes asked and
// not resolved yet. c may be nil for an end with no write (a fence, the
// session's end).
func (sw *splitWriterActor) surrender(c *actor.Context, s surrender) {
	for _, h := range s.tenancies {
		sw.end(h, s.reason)
	}
	sw.raiseEnds(s)
	for _, h := range s.tenancies {
		switch s.reason {
		case wire.EndCompleted: // a completing commit landed: complete the split record
			sw.enqueue(c, completeOp{split: h.Split, epoch: h.Epoch})
		case wire.EndFailed:
			sw.enqueue(c, failOp{split: h.Split, epoch: h.Epoch, reason: s.failure, replyTo: s.replyTo})
		}
		sw.claims.tenancyEnded(wire.TenancyEnded{Split: h.Split, Epoch: h.Epoch, Reason: s.reason})
	}
	switch s.reason {
	case wire.EndReleased, wire.EndDrained, wire.EndRevoked, wire.EndDeparted:
		sw.handBack(c, s)
	}
}

// end removes tenancy h from the registry for reason and tells revoke, the
// commit writer and the lease (surrender tells the root).
func (sw *splitWriterActor) end(h wire.HeldSplit, reason wire.EndReason) {
	sw.reg.end(h.Split)
	sw.v.Metrics.Owned(sw.reg.len())
	if reason.Involuntary() && reason != wire.EndRevoked {
		sw.v.Metrics.Lost(reason.String())
	}
	ended := wire.TenancyEnded{Split: h.Split, Epoch: h.Epoch, Reason: reason}
	// Revoke first: every write made for this end is asked after this send
	// (surrender), so its HandBackResolved reaches revoke after the end.
	sw.v.Tell(ended, sw.v.PIDs.Revoke)
	sw.v.PostCommit(worker.CellChanged{Split: h.Split, Epoch: h.Epoch, Closed: true})
	// The lease drops the tenancy's estimate, if it has one: it keeps only
	// what the split writer passed on, and no copy of the registry.
	sw.v.Tell(worker.RemainingReported{Split: h.Split, Epoch: h.Epoch}, sw.v.PIDs.Lease)
}

// endOne ends tenancy (id, epoch) for reason if it is held (a stale end of
// an earlier tenancy is ignored).
func (sw *splitWriterActor) endOne(c *actor.Context, id coordination.SplitID, epoch uint64, reason wire.EndReason) {
	if sw.reg.holds(id, epoch) {
		sw.surrender(c, surrender{tenancies: []wire.HeldSplit{{Split: id, Epoch: epoch}}, reason: reason})
	}
}

// forceRevocation surrenders a tenancy whose revocation revoke forced; a
// decline's reply goes with the end to the root, or, when the tenancy
// ended another way, is answered here.
func (sw *splitWriterActor) forceRevocation(c *actor.Context, m wire.RevocationChanged) {
	if sw.reg.holds(m.Split, m.Epoch) {
		sw.surrender(c, surrender{tenancies: []wire.HeldSplit{{Split: m.Split, Epoch: m.Epoch}}, reason: wire.EndRevoked, decline: m.ReplyTo})
		return
	}
	if m.ReplyTo != nil {
		sw.v.Reply(m.ReplyTo, messages.DeclineRevokeReply{Split: m.Split})
	}
}

// failSplit applies a Fail the root sent on: the tenancy the command names
// is failed, or the command is answered that it is not held.
func (sw *splitWriterActor) failSplit(c *actor.Context, m messages.FailSplit) {
	epoch := uint64(m.Epoch)
	e, ok := sw.reg.epoch(m.Split)
	switch {
	case !ok:
		sw.v.Reply(m.ReplyTo, messages.FailSplitReply{Split: m.Split, Err: worker.NotHeld(m.Split)})
	case e != epoch:
		sw.v.Reply(m.ReplyTo, messages.FailSplitReply{Split: m.Split, Err: worker.EpochNotHeld(m.Split, epoch, e)})
	default:
		sw.v.Metrics.Failed()
		sw.surrender(c, surrender{tenancies: []wire.HeldSplit{{Split: m.Split, Epoch: e}}, reason: wire.EndFailed, failure: m.Reason, replyTo: m.ReplyTo})
	}
}

// release applies a Release or ReleaseDrained the root sent on: the held
// tenancies it names are handed back; names not held are ignored.
func (sw *splitWriterActor) release(c *actor.Context, m messages.ReleaseSplits) {
	reason := wire.EndReleased
	if m.Drained {
		reason = wire.EndDrained
	}
	var hs []wire.HeldSplit
	for _, t := range m.Tenancies {
		if e := uint64(t.Epoch); sw.reg.holds(t.Split, e) {
			hs = append(hs, wire.HeldSplit{Split: t.Split, Epoch: e})
		}
	}
	if len(hs) == 0 {
		sw.v.Reply(m.ReplyTo, messages.ReleaseSplitsReply{})
		return
	}
	sw.surrender(c, surrender{tenancies: hs, reason: reason, replyTo: m.ReplyTo})
}

// depart applies the Depart the root sent on (docs/protocol.md,
// "Departure"): after a failure it answers the handle the named held
// tenancies and the session for the direct hand-back; otherwise it hands
// back every held tenancy and this worker's leftovers, answering the root
// DepartHandedBack after the batch's last write.
func (sw *splitWriterActor) depart(c *actor.Context, m wire.DepartJob) {
	sw.departing = true
	if m.Failure != nil {
		var hs []wire.HeldSplit
		for _, id := range m.Held {
			if e, ok := sw.reg.epoch(id); ok {
				hs = append(hs, wire.HeldSplit{Split: id, Epoch: e})
			}
		}
		sw.v.Reply(m.ReplyTo, wire.DepartJobReply{Err: m.Failure, Failed: true, Held: hs, Session: sw.nonce})
		return
	}
	sw.surrender(c, surrender{tenancies: sw.reg.list(), reason: wire.EndDeparted, replyTo: m.ReplyTo, leftovers: true})
}

// remainingReported passes a held tenancy's estimate on to the lease, whose
// next presence renewal carries the largest.
func (sw *splitWriterActor) remainingReported(m worker.RemainingReported) {
	if sw.reg.holds(m.Split, m.Epoch) {
		sw.v.Tell(m, sw.v.PIDs.Lease)
	}
}

// revocationRequested raises a revocation revoke requested as
// RevokeRequested while the tenancy is held (E6) and the job is neither
// decided nor departing.
func (sw *splitWriterActor) revocationRequested(m wire.RevocationChanged) {
	if sw.reg.holds(m.Split, m.Epoch) && !sw.verdict && !sw.departing {
		sw.raise(coordination.RevokeRequested{Split: m.Split})
	}
}

// subscribe answers the root, which sent on a user's actor's Subscribe,
// the tenancies held now: every start and end applied before reached the
// root first.
func (sw *splitWriterActor) subscribe(m messages.Subscribe) {
	sw.v.Tell(wire.BeginSubscription{ReplyTo: m.ReplyTo, Held: sw.reg.list()}, sw.v.PIDs.Root)
}
