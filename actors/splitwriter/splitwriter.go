package splitwriter

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/messages"
)

type handBackBatch struct {
	pending     int
	unconfirmed []coordination.SplitID
	replyTo     *actor.PID
}

// splitWriterActor, the split-writer actor, is the worker's
// assignment-diffing actor: it applies this worker's assignment record
// (assignmentChanged), which the claimer diffs and decides claims by, and
// posts the commit writer the record's cut requests (CutAsked). It owns the
// split records of the view and performs every fenced write on them
// (docs/protocol.md, "Claim protocol", "Hand-back, fail, quarantine"):
// claims with their progress fence, completions, fails, hand-backs and
// quarantines. It adopts maybe-landed writes, drops splits whose records
// moved away, and takes the verdict. Commits are written by the commit
// writer (actors/commitwriter). It owns the tenancy registry (tenancy.go):
// a won claim starts a tenancy in the same step, and every end is applied
// here. Its RecordsChanged and AssignmentChanged come from the watch. It
// raises the root seam events (EventsRaised, events.go: Gained, Lost,
// RevokeRequested of revoke's requests, Quarantined, the verdict) and
// tells it BeginSubscription and HealthChanged; revoke FollowAssignment,
// TenancyEnded and HandBackResolved; the commit writer CellChanged (a
// tenancy's cell opens or closes); the lease RemainingReported; and
// answers the commands the root sends on (FailSplit, ReleaseSplits,
// DepartJob) to their ReplyTo.
type splitWriterActor struct {
	v   *worker.Env
	log *slog.Logger

	fp        uint64
	nonce     string // this worker's session's, as the lease last told (SessionChanged; Env.Nonce before)
	records   map[coordination.SplitID]worker.SplitEntry
	reg       registry // the tenancy registry: owner (tenancy.go)
	busy      map[coordination.SplitID]bool
	queue     map[coordination.SplitID][]splitOp // splitwriter_ops.go
	completed int
	quarant   int
	// total and weight count the split records in the view and their
	// weight; doneWeight the completed ones' (the remaining-work gauges).
	total, weight, doneWeight int64

	appliedGen uint64 // the generation of the assignment record applied last (assignmentChanged)

	plan      protocol.PlanRecord
	hasPlan   bool
	joined    bool               // the lease's first live SessionChanged arrived
	health    wire.HealthChanged // what the root was last told (health.go)
	verdict   bool
	judging   bool
	departing bool

	nextBatch uint64
	handBacks map[uint64]*handBackBatch

	claims *claimer // the claim pipeline, deciding on records and the registry (claimer.go)
}

// New returns the producer of worker v's split-writer actor.
func New(v *worker.Env) actor.Producer {
	return func() actor.Receiver {
		sw := &splitWriterActor{
			v:         v,
			log:       v.Log.With("actor", "splitwriter"),
			nonce:     v.Nonce,
			records:   map[coordination.SplitID]worker.SplitEntry{},
			reg:       newRegistry(),
			busy:      map[coordination.SplitID]bool{},
			queue:     map[coordination.SplitID][]splitOp{},
			handBacks: map[uint64]*handBackBatch{},
		}
		sw.claims = newClaimer(sw)
		return sw
	}
}

// Receive handles one message. A run of split record changes, the hot
// message, is handled apart from the rest, whose switch has a large frame:
// hollywood runs each burst of an idle actor's inbox on a fresh goroutine,
// whose stack is copied whenever the path's frames outgrow it.
func (sw *splitWriterActor) Receive(c *actor.Context) {
	if m, ok := c.Message().(recordmsg.RecordsChanged); ok {
		sw.recordsChanged(c, m)
		return
	}
	sw.receive(c)
}

// recordsChanged folds a run of split record changes into the view and
// steps the claimer once if any of them gave it something to act on (a
// deletion always does).
func (sw *splitWriterActor) recordsChanged(c *actor.Context, m recordmsg.RecordsChanged) {
	act := false
	for i := range m.Records {
		r := &m.Records[i]
		if r.Deleted {
			sw.deleted(r.Split)
			act = true
			continue
		}
		act = sw.fold(r.Split, &r.Record, r.Rev) || act
	}
	if act {
		sw.claims.step(c)
	}
}

// sessionChanged applies the lease's report of this worker's session
// (docs/protocol.md, "Sessions"): at its end claims pause and every held
// tenancy ends; a session's start (the first once this worker joined the
// job) carries the job and the nonce claims write from then on.
func (sw *splitWriterActor) sessionChanged(c *actor.Context, m wire.SessionChanged) {
	if !m.Live {
		sw.claims.session = false
		sw.tellHealth()
		if sw.reg.len() > 0 {
			sw.surrender(c, surrender{tenancies: sw.reg.list(), reason: wire.EndStarved})
		}
		return
	}
	sw.fp, sw.nonce = m.Job.FP, m.Nonce
	sw.records = worker.Sized(sw.records, worker.SizeHint(m.Planned))
	sw.joined = true
	sw.claims.sessionStarted()
	sw.tellHealth()
	sw.claims.step(c)
}

// assignmentChanged applies a put or the deletion of this worker's
// assignment record (docs/protocol.md, "Following the assignment"), from
// the watch, unless a record of a newer generation was applied: the
// claimer, owner of the assigned set, diffs it and claims by it, revoke is
// told the held tenancies to follow, and the leader's cut requests the
// record carries go to the commit writer.
func (sw *splitWriterActor) assignmentChanged(c *actor.Context, m recordmsg.AssignmentChanged) {
	switch {
	case m.Deleted:
		sw.claims.unassigned()
	case m.Assignment.Generation < sw.appliedGen:
		return
	default:
		sw.appliedGen = m.Assignment.Generation
		sw.claims.assignment(m.Assignment.Splits)
		// Each cut request goes to the commit writer, which knows the
		// tenancy's durable record and hands it to the driver at most once
		// (docs/protocol.md, "Runtime split", "Who decides").
		for _, r := range m.Assignment.Cuts {
			sw.v.PostCommit(worker.CutAsked{Split: r.Split, Epoch: coordination.LeaseEpoch(r.Epoch), Counter: r.Counter, KeepPPM: r.KeepPPM, Parts: r.Parts})
		}
	}
	sw.followAll()
	sw.claims.step(c)
}

// receive handles every message but a run of split record changes.
func (sw *splitWriterActor) receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized, actor.Started, actor.Stopped:
	case recordmsg.PlanChanged: // from the watch: puts only (a deletion goes to the leader)
		if !m.Deleted {
			sw.plan, sw.hasPlan = m.Plan, true
			sw.judge()
		}
	case wire.PresenceChanged: // from the watch
		sw.claims.presence(m)
		sw.claims.step(c)
	case recordmsg.AssignmentChanged: // from the watch: this worker's own
		sw.assignmentChanged(c, m)
	case wire.WatchesChanged: // from the watch
		sw.claims.live = m.Live
		sw.tellHealth()
		sw.followAll()
		sw.claims.step(c)
	case wire.HeartbeatTicked: // from the lease
		sw.judge()
		sw.claims.heartbeat()
		sw.claims.step(c)
	case wire.SessionChanged: // from the lease
		sw.sessionChanged(c, m)
	case messages.FailSplit: // from the root (the handle's, or a user's actor's)
		sw.failSplit(c, m)
		sw.claims.step(c)
	case messages.ReleaseSplits: // from the root (the handle's, or a user's actor's)
		sw.release(c, m)
		sw.claims.step(c)
	case wire.RevocationChanged: // from revoke: requested, or forced
		if !m.Forced {
			sw.revocationRequested(m)
			break
		}
		sw.forceRevocation(c, m)
		sw.claims.step(c)
	case wire.EndTenancy: // from the commit writer
		sw.endOne(c, m.Split, m.Epoch, m.Reason)
		sw.claims.step(c)
	case wire.DepartJob: // from the root (the handle's Depart)
		sw.depart(c, m)
	case worker.RemainingReported: // from the handle (ReportRemaining)
		sw.remainingReported(m)
	case messages.Subscribe: // from the root (a user's actor's)
		sw.subscribe(m)
	case failDone:
		sw.learn(m.op.split, m.res.Rec, m.res.Rev)
		sw.failResult(m.op, m.res)
		sw.finished(c, m.op.split)
	case handBackDone:
		sw.learn(m.op.split, m.res.Rec, m.res.Rev)
		sw.handBackResult(m.op, m.res)
		sw.finished(c, m.op.split)
	case completeDone:
		sw.learn(m.op.split, m.res.Rec, m.res.Rev)
		sw.completeResult(m.op, m.res)
		sw.finished(c, m.op.split)
	case claimDone:
		sw.learn(m.op.target(), m.res.rec, m.res.rev)
		sw.claimResult(c, m.op, m.res)
		sw.finished(c, m.op.target())
	case leftoverDone:
		sw.learn(m.op.target(), m.res.Rec, m.res.Rev)
		sw.leftoverResult(m.op, m.res)
		sw.finished(c, m.op.target())
	case departLeftoverDone:
		sw.learn(m.op.split, m.res.Rec, m.res.Rev)
		sw.departLeftoverResult(m.op, m.res)
		sw.finished(c, m.op.split)
	case verdictListed:
		sw.listed(m)
	case recordChecked:
		sw.checked(m)
	default:
		sw.log.Warn("unknown message", "type", fmt.Sprintf("%T", m))
	}
}

// fold applies a split record version to the view: tallies, quarantine
// transitions, fences of held splits and the claimer's index; it reports
// whether the claimer has the split to act on.
func (sw *splitWriterActor) fold(id coordination.SplitID, rec *protocol.SplitRecord, rev uint64) bool {
	old, had := sw.records[id]
	if had && rev <= old.Rev {
		return false
	}
	sw.records[id] = worker.SplitEntry{Rec: *rec, Rev: rev}
	act := sw.claims.recordChanged(id, had, old.Rec.Owner, rec.Owner, rev)
	// A fence is reported before the quarantine it may carry.
	act = sw.fenceIfMovedAway(id, rec) || act
	if !had || old.Rec.Status != rec.Status {
		if had {
			sw.tally(&old.Rec, -1)
		}
		sw.tally(rec, 1)
		if rec.Status == protocol.StatusQuarantined {
			sw.raise(coordination.Quarantined{Split: id, Attempts: rec.Attempts})
		}
	}
	sw.judge()
	return act
}

// tally adds (d = 1) or removes (d = -1) a split record version to the
// view's counts and updates the gauges.
func (sw *splitWriterActor) tally(r *protocol.SplitRecord, d int) {
	w := int64(d) * int64(min(r.Weight, 1<<53))
	sw.total += int64(d)
	sw.weight += w
	switch r.Status {
	case protocol.StatusCompleted:
		sw.completed += d
		sw.doneWeight += w
	case protocol.StatusQuarantined:
		sw.quarant += d
	}
	sw.v.Metrics.Tallies(sw.completed, sw.quarant, sw.total-int64(sw.completed), sw.weight-sw.doneWeight)
}

// deleted applies a split record's deletion. No write of the protocol
// deletes one, so it was deleted outside the library: Fatal on every worker
// that sees it, once a read confirms it (missing.go).
func (sw *splitWriterActor) deleted(id coordination.SplitID) {
	old, had := sw.records[id]
	if !had {
		return
	}
	delete(sw.records, id)
	sw.tally(&old.Rec, -1)
	sw.claims.recordDeleted(id, old.Rec.Owner)
	sw.confirmDeleted(id)
}

// fenceSeen ends split id's held tenancy when the view's split record
// shows it moved away (the root emits Lost).
func (sw *splitWriterActor) fenceSeen(id coordination.SplitID) {
	if r, ok := sw.records[id]; ok {
		sw.fenceIfMovedAway(id, &r.Rec)
	}
}

// fenceIfMovedAway is fenceSeen with split id's record rec at hand (the
// fold's hot path, which keeps its frames small: docs/architecture.md); it
// reports whether it ended a tenancy.
func (sw *splitWriterActor) fenceIfMovedAway(id coordination.SplitID, rec *protocol.SplitRecord) bool {
	if t, held := sw.reg.held[id]; held && movedAway(rec, sw.v.ID, t) {
		sw.drop(id, t.Epoch)
		return true
	}
	return false
}

// drop ends a held split involuntarily (a fence): no write follows.
func (sw *splitWriterActor) drop(id coordination.SplitID, epoch uint64) {
	sw.surrender(nil, surrender{tenancies: []wire.HeldSplit{{Split: id, Epoch: epoch}}, reason: wire.EndFenced})
}

// resolved tells the actors that follow a surrendered split how its
// owner-clearing (or completing) write resolved.
func (sw *splitWriterActor) resolved(res wire.HandBackResolved) {
	sw.claims.handBackResolved(res)
	// Every surrender write is asked (surrender, tenancy.go) after revoke
	// was sent the tenancy's TenancyEnded, so this reaches revoke after
	// that TenancyEnded: one ordered stream, with no relay.
	sw.v.Tell(res, sw.v.PIDs.Revoke)
}

// enqueue starts op, or queues it behind the write in flight on its split.
func (sw *splitWriterActor) enqueue(c *actor.Context, op splitOp) {
	id := op.target()
	if sw.busy[id] {
		sw.queue[id] = append(sw.queue[id], op)
		return
	}
	sw.start(c, op)
}

// finished starts the write queued next on split id after one finished,
// and the claims its outcome allows.
func (sw *splitWriterActor) finished(c *actor.Context, id coordination.SplitID) {
	sw.next(c, id)
	sw.claims.step(c)
}

// next starts the write queued next on split id, after one finished.
func (sw *splitWriterActor) next(c *actor.Context, id coordination.SplitID) {
	delete(sw.busy, id)
	q := sw.queue[id]
	if len(q) == 0 {
		delete(sw.queue, id)
		return
	}
	op := q[0]
	if len(q) == 1 {
		delete(sw.queue, id)
	} else {
		sw.queue[id] = q[1:]
	}
	sw.start(c, op)
}

// learn folds the split record a finished write wrote or read (rev 0:
// none) into the view.
func (sw *splitWriterActor) learn(id coordination.SplitID, rec protocol.SplitRecord, rev uint64) {
	if rev != 0 {
		sw.fold(id, &rec, rev)
	}
}

// start launches op's write in the background. A write with nothing to
// write on is refused without I/O; its result still goes through the inbox
// so that the queue advances in order.
func (sw *splitWriterActor) start(c *actor.Context, op splitOp) {
	v, pid, fp := sw.v, c.PID(), sw.fp
	id := op.target()
	base, have := sw.records[id]
	now := v.NowMs()
	sw.busy[id] = true
	refused := splitWritten{Outcome: worker.CASFenced}
	switch op := op.(type) {
	case failOp:
		if !have { // the record left the view: nothing was written
			v.Send(pid, failDone{op: op, res: splitWritten{Outcome: worker.CASFenced, Err: worker.FencedErr(id)}})
			return
		}
		sw.launch(c, func(ctx context.Context) any {
			return failDone{op: op, res: casSplit(ctx, v, fp, id, op.epoch, "failing", base, func(r protocol.SplitRecord) protocol.SplitRecord {
				return r.Fail(v.Config.MaxAttempts, now)
			})}
		})
	case handBackOp:
		if !have {
			v.Send(pid, handBackDone{op: op, res: refused})
			return
		}
		sw.launch(c, func(ctx context.Context) any {
			return handBackDone{op: op, res: endTenancy(ctx, v, fp, id, op.epoch, "handing back", base, func(r protocol.SplitRecord) protocol.SplitRecord {
				return r.HandBack(now)
			})}
		})
	case completeOp:
		if !have {
			v.Send(pid, completeDone{op: op, res: refused})
			return
		}
		sw.launch(c, func(ctx context.Context) any {
			return completeDone{op: op, res: endTenancy(ctx, v, fp, id, op.epoch, "completing", base, func(r protocol.SplitRecord) protocol.SplitRecord {
				return r.Complete(now)
			})}
		})
	case claimOp: // the claimer's step checked the phase (claimer.launch)
		sw.launch(c, func(ctx context.Context) any {
			return claimDone{op: op, res: claimSplit(ctx, v, op.claim, now)}
		})
	case leftoverOp: // as claimOp
		lo := op.leftover
		sw.launch(c, func(ctx context.Context) any {
			return leftoverDone{op: op, res: casSplit(ctx, v, fp, id, lo.Record.Epoch, "handing back", worker.SplitEntry{Rec: lo.Record, Rev: lo.RecordRev}, func(r protocol.SplitRecord) protocol.SplitRecord {
				return r.HandBack(now)
			})}
		})
	case departLeftoverOp:
		var ok bool
		op.epoch = base.Rec.Epoch
		if op.complete, ok = sw.departReturn(id, base); !have || !ok {
			if _, held := sw.reg.held[id]; op.unseen && !held { // its record may name this session unseen: read it
				nonce := sw.nonce
				v.Go(func(ctx context.Context) {
					v.Send(pid, returnUnseenClaim(ctx, v, fp, op, nonce, now))
				})
				return
			}
			v.Send(pid, departLeftoverDone{op: op, res: refused})
			return
		}
		doing, build := "handing back", protocol.SplitRecord.HandBack
		if op.complete {
			doing, build = "completing", protocol.SplitRecord.Complete
		}
		sw.launch(c, func(ctx context.Context) any {
			return departLeftoverDone{op: op, res: casSplit(ctx, v, fp, id, op.epoch, doing, base, func(r protocol.SplitRecord) protocol.SplitRecord {
				return build(r, now)
			})}
		})
	}
}

// launch runs write on a goroutine of the worker, bounded by OpTimeout
// from now, and sends its result to the split-writer actor.
func (sw *splitWriterActor) launch(c *actor.Context, write func(ctx context.Context) any) {
	v, pid := sw.v, c.PID()
	v.Go(func(ctx context.Context) {
		ctx, cancel := v.OpCtx(ctx)
		defer cancel()
		v.Send(pid, write(ctx))
	})
}

// completeResult tells the followers a completion resolved; its write is
// not retried (a fenced one means the split moved on).
func (sw *splitWriterActor) completeResult(op completeOp, d splitWritten) {
	if d.Outcome == worker.CASFatal {
		sw.v.FailNow(d.Err)
	}
	sw.resolved(wire.HandBackResolved{Split: op.split, Epoch: op.epoch, Reason: wire.EndCompleted, Outcome: wire.HandBackLanded})
}

// leftoverResult frees the claimer's slot of a leftover's return.
func (sw *splitWriterActor) leftoverResult(op leftoverOp, d splitWritten) {
	sw.v.FatalIf(d.Err)
	sw.claims.abandoned(op.leftover.Split, op.leftover.RecordRev, d.Outcome == worker.CASUnconfirmed)
}

// failResult answers Fail and tells the followers how it resolved.
func (sw *splitWriterActor) failResult(op failOp, d splitWritten) {
	res := wire.HandBackResolved{Split: op.split, Epoch: op.epoch, Reason: wire.EndFailed, Outcome: resolution(d.Outcome)}
	err, attempts := d.Err, d.Rec.Attempts
	switch d.Outcome {
	case worker.CASLanded:
		err = nil
	case worker.CASFatal:
		sw.v.FailNow(d.Err)
	case worker.CASUnconfirmed:
		attempts++
		sw.v.FatalIf(d.Err)
	}
	sw.log.Warn("split reported as failed", "split", op.split, "epoch", op.epoch, "attempts", attempts, "reason", op.reason)
	sw.resolved(res)
	if op.replyTo != nil {
		sw.v.Reply(op.replyTo, messages.FailSplitReply{Split: op.split, Err: err})
	}
}

// handBack writes the hand-backs of s (and with s.leftovers, Depart's
// leftovers) as one batch, answered to s.replyTo after its last write.
func (sw *splitWriterActor) handBack(c *actor.Context, s surrender) {
	sw.nextBatch++
	id := sw.nextBatch
	ops := make([]splitOp, 0, len(s.tenancies))
	for _, h := range s.tenancies {
		ops = append(ops, handBackOp{split: h.Split, epoch: h.Epoch, batch: id, reason: s.reason})
	}
	if s.leftovers {
		ops = append(ops, sw.departLeftovers(s.tenancies, id)...)
	}
	if len(ops) == 0 {
		if s.replyTo != nil {
			sw.v.Reply(s.replyTo, handBackReply(s.reason, nil))
		}
		return
	}
	sw.handBacks[id] = &handBackBatch{pending: len(ops), replyTo: s.replyTo}
	for _, op := range ops {
		sw.enqueue(c, op)
	}
}

// handBackReply is the reply type the requester of a hand-back expects.
func handBackReply(reason wire.EndReason, unconfirmed []coordination.SplitID) any {
	var err error
	if len(unconfirmed) > 0 {
		err = worker.HandBackUnconfirmed(unconfirmed)
	}
	if reason == wire.EndDeparted {
		return wire.DepartHandedBack{Unconfirmed: unconfirmed, Err: err}
	}
	return messages.ReleaseSplitsReply{Err: err}
}

// handBackResult tells the followers how a hand-back resolved and settles
// it in its batch.
func (sw *splitWriterActor) handBackResult(op handBackOp, d splitWritten) {
	res := wire.HandBackResolved{Split: op.split, Epoch: op.epoch, Reason: op.reason, Outcome: resolution(d.Outcome)}
	switch res.Outcome {
	case wire.HandBackLanded:
		if op.reason == wire.EndReleased || op.reason == wire.EndDeparted {
			sw.v.Metrics.Released()
		}
	case wire.HandBackUnconfirmed:
		if d.Outcome == worker.CASFatal {
			sw.v.FailNow(d.Err)
		}
		sw.log.Warn("hand-back did not confirm; will retry it", "split", op.split, "err", d.Err)
	}
	if op.reason == wire.EndRevoked {
		if res.Outcome == wire.HandBackFenced {
			sw.v.Metrics.Lost("fenced")
		} else {
			sw.v.Metrics.Lost("revoked")
		}
	}
	sw.resolved(res)
	sw.settleBatch(op.batch, op.split, op.reason, res.Outcome == wire.HandBackUnconfirmed)
}

// settleBatch counts the write on split id done in hand-back batch batch
// (unconfirmed: it did not confirm) and answers the batch, whose writes
// end tenancies for reason, after its last write.
func (sw *splitWriterActor) settleBatch(batch uint64, id coordination.SplitID, reason wire.EndReason, unconfirmed bool) {
	b, ok := sw.handBacks[batch]
	if !ok {
		return
	}
	if unconfirmed {
		b.unconfirmed = append(b.unconfirmed, id)
	}
	b.pending--
	if b.pending == 0 {
		delete(sw.handBacks, batch)
		if b.replyTo != nil {
			sw.v.Reply(b.replyTo, handBackReply(reason, b.unconfirmed))
		}
	}
}

// claimResult starts the tenancy of a won claim, or frees the claimer's slot
// of an abandoned one or of one that outlived its session.
func (sw *splitWriterActor) claimResult(c *actor.Context, op claimOp, d claimed) {
	cl := op.claim
	id := op.target()
	abandon := func() {
		rev := cl.RecordRev
		if d.rev > rev {
			rev = d.rev
		}
		sw.claims.abandoned(id, rev, d.retry)
	}
	switch {
	case d.outcome != worker.CASLanded:
		abandon()
	case d.quar:
		sw.log.Warn("split quarantined after exhausting its attempts", "split", id, "attempts", d.rec.Attempts)
		abandon()
	case d.done:
		if d.retry {
			sw.claims.completionErred(id, d.rev)
		}
		abandon()
	case sw.claims.outlived(d.rec.Nonce):
		sw.log.Info("claim outlived its session; no tenancy began, its record is a leftover of this worker", "split", id, "epoch", d.rec.Epoch)
		sw.claims.claimOutlived(id, d.rev)
	default:
		sw.v.Metrics.Acquired(d.kind.AcquisitionReason())
		sw.log.Debug("split claimed", "split", id, "epoch", d.rec.Epoch, "kind", d.kind.String())
		sw.claimWon(c, d)
	}
}

// resolution is what the actors following a surrendered tenancy are told
// about its owner-clearing (fail, hand-back, completion) write: landed,
// fenced by another owner, or unconfirmed (a store error, or Fatal).
func resolution(o worker.CASOutcome) wire.HandBackOutcome {
	switch o {
	case worker.CASLanded:
		return wire.HandBackLanded
	case worker.CASFenced:
		return wire.HandBackFenced
	}
	return wire.HandBackUnconfirmed
}
