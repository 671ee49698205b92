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

// opKind names the writes the commit actor performs.
type opKind int

const (
	opFail opKind = iota + 1
	opHandBack
	opClaim
	opLeftover
	opComplete
	opDepartLeftover // Depart's return of a leftover (depart.go)
)

// recordOp is one queued write on one split. Writes on the same split run
// one at a time, in arrival order.
type recordOp struct {
	kind     opKind
	split    coordination.SplitID
	epoch    uint64
	replyTo  *actor.PID
	batch    uint64 // hand-back batch
	reason   messages.EndReason
	failMsg  string
	claim    messages.ClaimSplit
	leftover messages.ReturnLeftover
	deadline time.Time // zero: OpTimeout from start
}

// opDone is a finished recordOp, sent by its goroutine.
type opDone struct {
	op      recordOp
	outcome casOutcome
	err     error
	rec     protocol.SplitRecord // latest split record known to the writer
	rev     uint64               // its revision; 0 if none
	prog    protocol.ProgressRecord
	progRev uint64                 // 0: no progress record learned
	adopted bool                   // the write was found landed after a lost CAS (commits)
	kind    protocol.ClaimKind     // claims: the kind that won
	spec    coordination.SplitSpec // claims: the split's spec, read before the claim
	quar    bool                   // claims: the write quarantined
	retry   bool                   // claims: gave up on a store error
	done    bool                   // the progress was found completed
}

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
	queue     map[coordination.SplitID][]recordOp
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
			queue:     map[coordination.SplitID][]recordOp{},
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
			cm.enqueue(c, recordOp{kind: opComplete, split: m.Split, epoch: m.Epoch, reason: messages.EndCompleted})
		}
	case messages.Departing:
		cm.departing = true
	case messages.FailSplit:
		cm.enqueue(c, recordOp{kind: opFail, split: m.Split, epoch: m.Epoch, replyTo: m.ReplyTo, failMsg: m.Reason, reason: messages.EndFailed})
	case messages.HandBackSplits:
		cm.handBack(c, m)
	case messages.ClaimSplit:
		cm.enqueue(c, recordOp{kind: opClaim, split: m.Candidate.ID, claim: m})
	case messages.ReturnLeftover:
		cm.enqueue(c, recordOp{kind: opLeftover, split: m.Split, leftover: m})
	case opDone:
		cm.done(c, m)
	case verdictListed:
		cm.listed(m)
	case recordChecked:
		cm.checked(m)
	default:
		cm.log.Warn("unknown message", "type", fmt.Sprintf("%T", m))
	}
}

// publish sends msg to its subscribers (routing.go).
func (cm *commit) publish(msg any) { cm.v.publish(roleCommit, msg) }

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
			cm.publish(messages.SplitQuarantined{Split: id, Attempts: rec.Attempts})
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
	cm.publish(messages.EndTenancy{Split: id, Epoch: epoch, Reason: messages.EndFenced})
}

// resolved tells the actors that follow a surrendered split how its
// owner-clearing (or completing) write resolved.
func (cm *commit) resolved(res messages.HandBackResolved) {
	cm.publish(res)
}

func (cm *commit) enqueue(c *actor.Context, op recordOp) {
	if cm.busy[op.split] {
		cm.queue[op.split] = append(cm.queue[op.split], op)
		return
	}
	cm.start(c, op)
}

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

// start launches op's write in the background.
func (cm *commit) start(c *actor.Context, op recordOp) {
	v, pid := cm.v, c.PID()
	base, have := cm.records[op.split]
	now := v.nowMs()
	cm.busy[op.split] = true
	// A write with nothing to write on is refused without I/O; its opDone
	// still goes through the inbox so that the queue advances in order.
	refused := false
	var why error
	switch op.kind {
	case opFail:
		refused, why = !have, fencedErr(op.split) // the record left the view: nothing was written
	case opHandBack, opComplete:
		refused = !have
	case opClaim:
		refused = cm.departing || cm.verdict
	case opLeftover:
		refused = cm.departing || cm.verdict
	case opDepartLeftover:
		op.epoch = base.rec.Epoch
		refused = !have || !cm.isLeftover(op.split, base.rec)
	}
	if refused {
		v.send(pid, opDone{op: op, outcome: casFenced, err: why})
		return
	}
	v.goFunc(func(ctx context.Context) {
		var cancel context.CancelFunc
		if op.deadline.IsZero() {
			ctx, cancel = v.opCtx(ctx)
		} else {
			ctx, cancel = context.WithDeadline(ctx, op.deadline)
		}
		defer cancel()
		var d opDone
		switch op.kind {
		case opFail:
			d = casSplit(ctx, v, op, base, func(r protocol.SplitRecord) protocol.SplitRecord {
				return r.Fail(v.cfg.MaxAttempts, now)
			})
		case opHandBack, opComplete:
			d = endTenancy(ctx, v, op, base, now)
		case opDepartLeftover:
			d = casSplit(ctx, v, op, base, func(r protocol.SplitRecord) protocol.SplitRecord {
				return r.HandBack(now)
			})
		case opLeftover:
			lo := op.leftover
			d = casSplit(ctx, v, recordOp{kind: opLeftover, split: op.split, epoch: lo.Record.Epoch}, recEntry{rec: lo.Record, rev: lo.RecordRev}, func(r protocol.SplitRecord) protocol.SplitRecord {
				return r.HandBack(now)
			})
		case opClaim:
			d = claimSplit(ctx, v, op.claim, now)
		}
		d.op = op
		v.send(pid, d)
	})
}

// done applies a finished write.
func (cm *commit) done(c *actor.Context, d opDone) {
	op := d.op
	defer cm.next(c, op.split)
	if d.rev != 0 {
		cm.fold(op.split, d.rec, d.rev)
	}
	switch op.kind {
	case opFail:
		cm.failResult(op, d)
	case opHandBack:
		cm.handBackResult(op, d)
	case opComplete:
		if d.outcome == casFatal {
			cm.v.failNow(d.err)
		}
		cm.resolved(messages.HandBackResolved{Split: op.split, Epoch: op.epoch, Reason: messages.EndCompleted, Outcome: messages.HandBackLanded})
	case opDepartLeftover:
		cm.departLeftoverResult(op, d)
	case opLeftover:
		cm.v.fatalIf(d.err)
		cm.publish(messages.ClaimAbandoned{Split: op.split, Rev: op.leftover.RecordRev, Retry: d.outcome == casUnconfirmed})
	case opClaim:
		cm.claimResult(op, d)
	}
}

func (cm *commit) failResult(op recordOp, d opDone) {
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
	cm.log.Warn("split reported as failed", "split", op.split, "epoch", op.epoch, "attempts", attempts, "reason", op.failMsg)
	cm.resolved(res)
	if op.replyTo != nil {
		cm.v.send(op.replyTo, messages.FailSplitReply{Err: err})
	}
}

func (cm *commit) handBack(c *actor.Context, m messages.HandBackSplits) {
	cm.nextBatch++
	id := cm.nextBatch
	deadline := time.Now().Add(cm.v.cfg.OpTimeout)
	ops := make([]recordOp, 0, len(m.Splits))
	for _, h := range m.Splits {
		ops = append(ops, recordOp{kind: opHandBack, split: h.Split, epoch: h.Epoch, batch: id, reason: m.Reason, deadline: deadline})
	}
	if m.Leftovers {
		ops = append(ops, cm.departLeftovers(m.Splits, id, deadline)...)
	}
	if len(ops) == 0 {
		if m.ReplyTo != nil {
			cm.v.send(m.ReplyTo, handBackReply(m.Reason, nil))
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

func (cm *commit) handBackResult(op recordOp, d opDone) {
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
	cm.settleBatch(op, res.Outcome == messages.HandBackUnconfirmed)
}

// settleBatch counts op's write done in its hand-back batch (unconfirmed:
// it did not confirm) and answers the batch after its last write.
func (cm *commit) settleBatch(op recordOp, unconfirmed bool) {
	b, ok := cm.handBacks[op.batch]
	if !ok {
		return
	}
	if unconfirmed {
		b.unconfirmed = append(b.unconfirmed, op.split)
	}
	b.pending--
	if b.pending == 0 {
		delete(cm.handBacks, op.batch)
		if b.replyTo != nil {
			cm.v.send(b.replyTo, handBackReply(op.reason, b.unconfirmed))
		}
	}
}

func (cm *commit) claimResult(op recordOp, d opDone) {
	cl := op.claim
	id := op.split
	abandon := func() {
		rev := cl.RecordRev
		if d.rev > rev {
			rev = d.rev
		}
		cm.publish(messages.ClaimAbandoned{Split: id, Rev: rev, Retry: d.retry})
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
		cm.publish(messages.ClaimWon{Spec: d.spec, Epoch: d.rec.Epoch, Nonce: d.rec.Nonce, Fence: d.prog, FenceRev: d.progRev})
	}
}
