package actors

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/messages"
)

// recEntry is a split record and its revision.
type recEntry struct {
	rec protocol.SplitRecord
	rev uint64
}

// casOutcome is how a fenced write resolved.
type casOutcome int

const (
	casLanded casOutcome = iota + 1
	casFenced
	casUnconfirmed
	casFatal
)

type handBackBatch struct {
	pending     int
	unconfirmed []coordination.SplitID
	replyTo     *actor.PID
}

// commit owns the split records of the view and performs every fenced write
// on them (docs/protocol.md, "Claim protocol", "Hand-back, fail,
// quarantine"): claims with their progress fence, completions, fails,
// hand-backs and quarantines. It adopts maybe-landed writes, drops splits
// whose records moved away, and takes the verdict. Commits are written by
// the handle (handle_commit.go).
type commit struct {
	v   *env
	log *slog.Logger

	fp        uint64
	records   map[coordination.SplitID]recEntry
	held      heldView // derived from the root's registry (tenancy.go)
	busy      map[coordination.SplitID]bool
	queue     map[coordination.SplitID][]splitOp // commit_ops.go
	completed int
	quarant   int
	// total and weight count the split records in the view and their
	// weight; doneWeight the completed ones' (the remaining-work gauges).
	total, weight, doneWeight int64

	plan      protocol.PlanRecord
	hasPlan   bool
	verdict   bool
	judging   bool
	departing bool

	nextBatch uint64
	handBacks map[uint64]*handBackBatch
}

func newCommit(v *env) actor.Producer {
	return func() actor.Receiver {
		return &commit{
			v:         v,
			log:       v.log.With("actor", "commit"),
			records:   map[coordination.SplitID]recEntry{},
			held:      heldView{},
			busy:      map[coordination.SplitID]bool{},
			queue:     map[coordination.SplitID][]splitOp{},
			handBacks: map[uint64]*handBackBatch{},
		}
	}
}

// Receive handles one message.
func (cm *commit) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized, actor.Started, actor.Stopped:
	case messages.JobStarted:
		cm.fp = m.FP
	case messages.RecordsObserved:
		for _, r := range m.Records {
			cm.fold(r.Split, r.Record, r.Rev)
		}
	case messages.RecordDeleted:
		cm.deleted(m.Split)
	case messages.PlanObserved:
		cm.plan, cm.hasPlan = m.Plan, true
		cm.judge()
	case messages.PlanDeleted:
	case messages.WatchesChanged:
	case messages.HeartbeatTicked:
		cm.judge()
	case messages.TenancyStarted:
		cm.held.apply(m)
		cm.fenceSeen(m.Split)
	case messages.TenancyEnded:
		cm.held.apply(m)
		if m.Reason == messages.EndCompleted {
			// The handle's completed commit landed: complete the split record.
			cm.enqueue(c, completeOp{split: m.Split, epoch: m.Epoch})
		}
	case messages.Departing:
		cm.departing = true
	case messages.FailSplit:
		cm.enqueue(c, failOp{split: m.Split, epoch: m.Epoch, reason: m.Reason, replyTo: m.ReplyTo})
	case messages.HandBackSplits:
		cm.handBack(c, m)
	case messages.ClaimSplit:
		cm.enqueue(c, claimOp{claim: m})
	case messages.ReturnLeftover:
		cm.enqueue(c, leftoverOp{leftover: m})
	case failDone:
		cm.learn(m.op.split, m.res.rec, m.res.rev)
		cm.failResult(m.op, m.res)
		cm.next(c, m.op.split)
	case handBackDone:
		cm.learn(m.op.split, m.res.rec, m.res.rev)
		cm.handBackResult(m.op, m.res)
		cm.next(c, m.op.split)
	case completeDone:
		cm.learn(m.op.split, m.res.rec, m.res.rev)
		cm.completeResult(m.op, m.res)
		cm.next(c, m.op.split)
	case claimDone:
		cm.learn(m.op.target(), m.res.rec, m.res.rev)
		cm.claimResult(m.op, m.res)
		cm.next(c, m.op.target())
	case leftoverDone:
		cm.learn(m.op.target(), m.res.rec, m.res.rev)
		cm.leftoverResult(m.op, m.res)
		cm.next(c, m.op.target())
	case departLeftoverDone:
		cm.learn(m.op.split, m.res.rec, m.res.rev)
		cm.departLeftoverResult(m.op, m.res)
		cm.next(c, m.op.split)
	case verdictListed:
		cm.listed(m)
	case recordChecked:
		cm.checked(m)
	default:
		cm.log.Warn("unknown message", "type", fmt.Sprintf("%T", m))
	}
}

// fold applies a split record version to the view: tallies, quarantine
// transitions, and fences of held splits.
func (cm *commit) fold(id coordination.SplitID, rec protocol.SplitRecord, rev uint64) {
	old, had := cm.records[id]
	if had && rev <= old.rev {
		return
	}
	cm.records[id] = recEntry{rec: rec, rev: rev}
	// A fence is reported before the quarantine it may carry.
	cm.fenceSeen(id)
	if !had || old.rec.Status != rec.Status {
		if had {
			cm.tally(old.rec, -1)
		}
		cm.tally(rec, 1)
		if rec.Status == protocol.StatusQuarantined {
			cm.v.route(roleCommit, messages.SplitQuarantined{Split: id, Attempts: rec.Attempts})
		}
	}
	cm.judge()
}

// tally adds (d = 1) or removes (d = -1) a split record version to the
// view's counts and updates the gauges.
func (cm *commit) tally(r protocol.SplitRecord, d int) {
	w := int64(d) * int64(min(r.Weight, 1<<53))
	cm.total += int64(d)
	cm.weight += w
	switch r.Status {
	case protocol.StatusCompleted:
		cm.completed += d
		cm.doneWeight += w
	case protocol.StatusQuarantined:
		cm.quarant += d
	}
	cm.v.met.tallies(cm.completed, cm.quarant, cm.total-int64(cm.completed), cm.weight-cm.doneWeight)
}

// deleted applies a split record's deletion. No write of the protocol
// deletes one, so it was deleted outside the library: Fatal on every worker
// that sees it, once a read confirms it (missing.go).
func (cm *commit) deleted(id coordination.SplitID) {
	old, had := cm.records[id]
	if !had {
		return
	}
	delete(cm.records, id)
	cm.tally(old.rec, -1)
	cm.confirmDeleted(id)
}

// fenceSeen asks the root to end split id's held tenancy when the view's
// split record shows it moved away (the root emits Lost). Until the root's
// TenancyEnded arrives a later record may ask again; the root's registry
// ignores the repeat.
func (cm *commit) fenceSeen(id coordination.SplitID) {
	t, held := cm.held[id]
	r, ok := cm.records[id]
	if held && ok && movedAway(r.rec, cm.v.id, t) {
		cm.drop(id, t.epoch)
	}
}

// drop asks the root to end a held split involuntarily (a fence).
func (cm *commit) drop(id coordination.SplitID, epoch uint64) {
	cm.v.route(roleCommit, messages.EndTenancy{Split: id, Epoch: epoch, Reason: messages.EndFenced})
}

// resolved tells the actors that follow a surrendered split how its
// owner-clearing (or completing) write resolved.
func (cm *commit) resolved(res messages.HandBackResolved) {
	cm.v.route(roleCommit, res)
}

// enqueue starts op, or queues it behind the write in flight on its split.
func (cm *commit) enqueue(c *actor.Context, op splitOp) {
	id := op.target()
	if cm.busy[id] {
		cm.queue[id] = append(cm.queue[id], op)
		return
	}
	cm.start(c, op)
}

// next starts the write queued next on split id, after one finished.
func (cm *commit) next(c *actor.Context, id coordination.SplitID) {
	delete(cm.busy, id)
	q := cm.queue[id]
	if len(q) == 0 {
		delete(cm.queue, id)
		return
	}
	op := q[0]
	if len(q) == 1 {
		delete(cm.queue, id)
	} else {
		cm.queue[id] = q[1:]
	}
	cm.start(c, op)
}

// learn folds the split record a finished write wrote or read (rev 0:
// none) into the view.
func (cm *commit) learn(id coordination.SplitID, rec protocol.SplitRecord, rev uint64) {
	if rev != 0 {
		cm.fold(id, rec, rev)
	}
}

// start launches op's write in the background. A write with nothing to
// write on is refused without I/O; its result still goes through the inbox
// so that the queue advances in order.
func (cm *commit) start(c *actor.Context, op splitOp) {
	v, pid := cm.v, c.PID()
	id := op.target()
	base, have := cm.records[id]
	now := v.nowMs()
	cm.busy[id] = true
	refused := splitWritten{outcome: casFenced}
	switch op := op.(type) {
	case failOp:
		if !have { // the record left the view: nothing was written
			v.send(pid, failDone{op: op, res: splitWritten{outcome: casFenced, err: fencedErr(id)}})
			return
		}
		cm.launch(c, time.Time{}, func(ctx context.Context) any {
			return failDone{op: op, res: casSplit(ctx, v, id, op.epoch, "failing", base, func(r protocol.SplitRecord) protocol.SplitRecord {
				return r.Fail(v.cfg.MaxAttempts, now)
			})}
		})
	case handBackOp:
		if !have {
			v.send(pid, handBackDone{op: op, res: refused})
			return
		}
		cm.launch(c, op.deadline, func(ctx context.Context) any {
			return handBackDone{op: op, res: endTenancy(ctx, v, id, op.epoch, "handing back", base, func(r protocol.SplitRecord) protocol.SplitRecord {
				return r.HandBack(now)
			})}
		})
	case completeOp:
		if !have {
			v.send(pid, completeDone{op: op, res: refused})
			return
		}
		cm.launch(c, time.Time{}, func(ctx context.Context) any {
			return completeDone{op: op, res: endTenancy(ctx, v, id, op.epoch, "completing", base, func(r protocol.SplitRecord) protocol.SplitRecord {
				return r.Complete(now)
			})}
		})
	case claimOp:
		if cm.departing || cm.verdict {
			v.send(pid, claimDone{op: op, res: claimed{outcome: casFenced}})
			return
		}
		cm.launch(c, time.Time{}, func(ctx context.Context) any {
			return claimDone{op: op, res: claimSplit(ctx, v, op.claim, now)}
		})
	case leftoverOp:
		if cm.departing || cm.verdict {
			v.send(pid, leftoverDone{op: op, res: refused})
			return
		}
		lo := op.leftover
		cm.launch(c, time.Time{}, func(ctx context.Context) any {
			return leftoverDone{op: op, res: casSplit(ctx, v, id, lo.Record.Epoch, "handing back", recEntry{rec: lo.Record, rev: lo.RecordRev}, func(r protocol.SplitRecord) protocol.SplitRecord {
				return r.HandBack(now)
			})}
		})
	case departLeftoverOp:
		op.epoch = base.rec.Epoch
		if !have || !cm.isLeftover(id, base.rec) {
			v.send(pid, departLeftoverDone{op: op, res: refused})
			return
		}
		cm.launch(c, op.deadline, func(ctx context.Context) any {
			return departLeftoverDone{op: op, res: casSplit(ctx, v, id, op.epoch, "handing back", base, func(r protocol.SplitRecord) protocol.SplitRecord {
				return r.HandBack(now)
			})}
		})
	}
}

// launch runs write on a goroutine of the worker, bounded by deadline (zero:
// OpTimeout from now), and sends its result to the commit actor.
func (cm *commit) launch(c *actor.Context, deadline time.Time, write func(ctx context.Context) any) {
	v, pid := cm.v, c.PID()
	v.goFunc(func(ctx context.Context) {
		var cancel context.CancelFunc
		if deadline.IsZero() {
			ctx, cancel = v.opCtx(ctx)
		} else {
			ctx, cancel = context.WithDeadline(ctx, deadline)
		}
		defer cancel()
		v.send(pid, write(ctx))
	})
}

// completeResult tells the followers a completion resolved; its write is
// not retried (a fenced one means the split moved on).
func (cm *commit) completeResult(op completeOp, d splitWritten) {
	if d.outcome == casFatal {
		cm.v.failNow(d.err)
	}
	cm.resolved(messages.HandBackResolved{Split: op.split, Epoch: op.epoch, Reason: messages.EndCompleted, Outcome: messages.HandBackLanded})
}

// leftoverResult tells the assign actor a leftover's return resolved.
func (cm *commit) leftoverResult(op leftoverOp, d splitWritten) {
	cm.v.fatalIf(d.err)
	cm.v.route(roleCommit, messages.ClaimAbandoned{Split: op.leftover.Split, Rev: op.leftover.RecordRev, Retry: d.outcome == casUnconfirmed})
}

// failResult answers Fail and tells the followers how it resolved.
func (cm *commit) failResult(op failOp, d splitWritten) {
	res := messages.HandBackResolved{Split: op.split, Epoch: op.epoch, Reason: messages.EndFailed, Outcome: resolution(d.outcome)}
	err, attempts := d.err, d.rec.Attempts
	switch d.outcome {
	case casLanded:
		err = nil
	case casFatal:
		cm.v.failNow(d.err)
	case casUnconfirmed:
		attempts++
		cm.v.fatalIf(d.err)
	}
	cm.log.Warn("split reported as failed", "split", op.split, "epoch", op.epoch, "attempts", attempts, "reason", op.reason)
	cm.resolved(res)
	if op.replyTo != nil {
		cm.v.reply(op.replyTo, messages.FailSplitReply{Err: err})
	}
}

func (cm *commit) handBack(c *actor.Context, m messages.HandBackSplits) {
	cm.nextBatch++
	id := cm.nextBatch
	deadline := time.Now().Add(cm.v.cfg.OpTimeout)
	ops := make([]splitOp, 0, len(m.Splits))
	for _, h := range m.Splits {
		ops = append(ops, handBackOp{split: h.Split, epoch: h.Epoch, batch: id, reason: m.Reason, deadline: deadline})
	}
	if m.Leftovers {
		ops = append(ops, cm.departLeftovers(m.Splits, id, deadline)...)
	}
	if len(ops) == 0 {
		if m.ReplyTo != nil {
			cm.v.reply(m.ReplyTo, handBackReply(m.Reason, nil))
		}
		return
	}
	cm.handBacks[id] = &handBackBatch{pending: len(ops), replyTo: m.ReplyTo}
	for _, op := range ops {
		cm.enqueue(c, op)
	}
}

// handBackReply is the reply type the requester of a hand-back expects.
func handBackReply(reason messages.EndReason, unconfirmed []coordination.SplitID) any {
	var err error
	if len(unconfirmed) > 0 {
		err = handBackUnconfirmed(unconfirmed)
	}
	if reason == messages.EndDeparted {
		return messages.HandBackSplitsReply{Unconfirmed: unconfirmed, Err: err}
	}
	return messages.ReleaseSplitsReply{Err: err}
}

// handBackResult tells the followers how a hand-back resolved and settles
// it in its batch.
func (cm *commit) handBackResult(op handBackOp, d splitWritten) {
	res := messages.HandBackResolved{Split: op.split, Epoch: op.epoch, Reason: op.reason, Outcome: resolution(d.outcome)}
	switch res.Outcome {
	case messages.HandBackLanded:
		if op.reason == messages.EndReleased || op.reason == messages.EndDeparted {
			cm.v.met.released()
		}
	case messages.HandBackUnconfirmed:
		if d.outcome == casFatal {
			cm.v.failNow(d.err)
		}
		cm.log.Warn("hand-back did not confirm; will retry it", "split", op.split, "err", d.err)
	}
	if op.reason == messages.EndRevoked {
		if res.Outcome == messages.HandBackFenced {
			cm.v.met.lost("fenced")
		} else {
			cm.v.met.lost("revoked")
		}
	}
	cm.resolved(res)
	cm.settleBatch(op.batch, op.split, op.reason, res.Outcome == messages.HandBackUnconfirmed)
}

// settleBatch counts the write on split id done in hand-back batch batch
// (unconfirmed: it did not confirm) and answers the batch, whose writes
// end tenancies for reason, after its last write.
func (cm *commit) settleBatch(batch uint64, id coordination.SplitID, reason messages.EndReason, unconfirmed bool) {
	b, ok := cm.handBacks[batch]
	if !ok {
		return
	}
	if unconfirmed {
		b.unconfirmed = append(b.unconfirmed, id)
	}
	b.pending--
	if b.pending == 0 {
		delete(cm.handBacks, batch)
		if b.replyTo != nil {
			cm.v.reply(b.replyTo, handBackReply(reason, b.unconfirmed))
		}
	}
}

// claimResult reports a won claim to the root, or an abandoned one to the
// assign actor.
func (cm *commit) claimResult(op claimOp, d claimed) {
	cl := op.claim
	id := op.target()
	abandon := func() {
		rev := cl.RecordRev
		if d.rev > rev {
			rev = d.rev
		}
		cm.v.route(roleCommit, messages.ClaimAbandoned{Split: id, Rev: rev, Retry: d.retry})
	}
	switch {
	case d.outcome != casLanded:
		abandon()
	case d.quar:
		cm.log.Warn("split quarantined after exhausting its attempts", "split", id, "attempts", d.rec.Attempts)
		abandon()
	case d.done:
		abandon()
	default:
		cm.v.met.acquired(d.kind.AcquisitionReason())
		cm.log.Debug("split claimed", "split", id, "epoch", d.rec.Epoch, "kind", d.kind.String())
		cm.v.route(roleCommit, messages.ClaimWon{Spec: d.spec, Epoch: d.rec.Epoch, Nonce: d.rec.Nonce, Fence: d.prog, FenceRev: d.progRev})
	}
}
