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
	"github.com/spate-go/coordination/store"
)

// recEntry is a progress record and its revision.
type recEntry struct {
	rec protocol.ProgressRecord
	rev uint64
}

// casOutcome is how a fenced record write resolved.
type casOutcome int

const (
	casLanded casOutcome = iota + 1
	casFenced
	casUnconfirmed
	casFatal
)

// opKind names the record writes the commit actor performs.
type opKind int

const (
	opCommit opKind = iota + 1
	opFinal
	opFail
	opHandBack
	opClaim
)

// recordOp is one queued write on one split's record. Writes on the same
// split run one at a time, in arrival order.
type recordOp struct {
	kind     opKind
	split    coordination.SplitID
	epoch    uint64
	progress coordination.SplitProgress
	replyTo  *actor.PID
	batch    uint64 // final commit or hand-back batch
	index    int    // entry index within a final batch
	reason   messages.EndReason
	failMsg  string
	claim    messages.ClaimRecord
	deadline time.Time // zero: OpTimeout from start
}

// opDone is a finished recordOp, sent by its goroutine.
type opDone struct {
	op      recordOp
	outcome casOutcome
	err     error
	rec     protocol.ProgressRecord // latest record known to the writer
	rev     uint64                  // its revision; 0 if none
	adopted bool                    // the write was found landed after a lost CAS
	kind    protocol.ClaimKind      // claims: the kind that won
	quar    bool                    // claims: the write quarantined
}

type finalBatch struct {
	errs    []error
	splits  []coordination.SplitID
	settled []bool // the entry's outcome is known
	pending int
	replyTo *actor.PID
	fatal   error
	timer   *time.Timer
}

type handBackBatch struct {
	pending     int
	unconfirmed []coordination.SplitID
	replyTo     *actor.PID
}

type (
	finalDeadline struct{ batch uint64 }
	verdictListed struct {
		recs []protocol.ProgressRecord
		revs []uint64
		err  error
	}
)

// commit owns the durable progress records and performs every fenced CAS
// on them: claims, commits, final commits, fails, hand-backs and quarantines
// (§16.4, §18, §19.2). It judges watermark monotonicity, adopts maybe-landed
// writes, drops splits whose record moved away, and takes the verdict (§22).
type commit struct {
	v   *env
	log *slog.Logger

	fp        uint64
	records   map[coordination.SplitID]recEntry
	held      map[coordination.SplitID]uint64
	busy      map[coordination.SplitID]bool
	queue     map[coordination.SplitID][]recordOp
	completed int
	quarant   int

	plan      protocol.PlanRecord
	hasPlan   bool
	verdict   bool
	judging   bool
	departing bool

	nextBatch uint64
	finals    map[uint64]*finalBatch
	handBacks map[uint64]*handBackBatch
}

func newCommit(v *env) actor.Producer {
	return func() actor.Receiver {
		return &commit{
			v:         v,
			log:       v.log.With("actor", "commit"),
			records:   map[coordination.SplitID]recEntry{},
			held:      map[coordination.SplitID]uint64{},
			busy:      map[coordination.SplitID]bool{},
			queue:     map[coordination.SplitID][]recordOp{},
			finals:    map[uint64]*finalBatch{},
			handBacks: map[uint64]*handBackBatch{},
		}
	}
}

// Receive handles one message.
func (cm *commit) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized, actor.Started:
	case actor.Stopped:
		for _, b := range cm.finals {
			b.timer.Stop()
		}
	case messages.JobStarted:
		cm.fp = m.FP
	case messages.RecordObserved:
		cm.fold(m.Split, m.Record, m.Rev)
	case messages.RecordDeleted:
		cm.deleted(m.Split)
	case messages.PlanObserved:
		cm.plan, cm.hasPlan = m.Plan, true
		cm.judge()
	case messages.PlanDeleted:
	case messages.WatchesChanged:
	case messages.HeartbeatTicked:
		cm.judge()
	case messages.TenancyEnded:
		if e, ok := cm.held[m.Split]; ok && e == m.Epoch {
			delete(cm.held, m.Split)
		}
	case messages.Departing:
		cm.departing = true
	case messages.CommitSplit:
		cm.enqueue(c, recordOp{kind: opCommit, split: m.Split, epoch: m.Epoch, progress: m.Progress, replyTo: m.ReplyTo})
	case messages.CommitFinalBatch:
		cm.finalBatch(c, m)
	case messages.FailSplit:
		cm.enqueue(c, recordOp{kind: opFail, split: m.Split, epoch: m.Epoch, replyTo: m.ReplyTo, failMsg: m.Reason, reason: messages.EndFailed})
	case messages.HandBackSplits:
		cm.handBack(c, m)
	case messages.ClaimRecord:
		cm.enqueue(c, recordOp{kind: opClaim, split: m.Claim.Candidate.ID, claim: m})
	case opDone:
		cm.done(c, m)
	case finalDeadline:
		if b, ok := cm.finals[m.batch]; ok {
			cm.replyFinal(m.batch, b)
		}
	case verdictListed:
		cm.listed(m)
	default:
		cm.log.Warn("unknown message", "type", fmt.Sprintf("%T", m))
	}
}

// fold applies a record version to the view (§11.2): tallies, quarantine
// transitions, and fences or completions of held splits.
func (cm *commit) fold(id coordination.SplitID, rec protocol.ProgressRecord, rev uint64) {
	old, had := cm.records[id]
	if had && rev <= old.rev {
		return
	}
	cm.records[id] = recEntry{rec: rec, rev: rev}
	// A fence is reported before the quarantine it may carry (E4).
	if e, ok := cm.held[id]; ok {
		switch {
		case rec.Epoch > e || rec.Owner != cm.v.id:
			cm.drop(id, e, messages.EndFenced)
		case rec.Epoch == e && rec.Status == protocol.StatusCompleted:
			cm.finish(id, e)
		}
	}
	if !had || old.rec.Status != rec.Status {
		if had {
			cm.tally(old.rec.Status, -1)
		}
		cm.tally(rec.Status, 1)
		if rec.Status == protocol.StatusQuarantined {
			cm.v.send(cm.v.pid.root, messages.SplitQuarantined{Split: id, Attempts: rec.Attempts})
		}
	}
	cm.judge()
}

func (cm *commit) tally(s protocol.Status, d int) {
	switch s {
	case protocol.StatusCompleted:
		cm.completed += d
	case protocol.StatusQuarantined:
		cm.quarant += d
	}
	cm.v.met.tallies(cm.completed, cm.quarant)
}

func (cm *commit) deleted(id coordination.SplitID) {
	old, had := cm.records[id]
	if !had {
		return
	}
	delete(cm.records, id)
	cm.tally(old.rec.Status, -1)
	if e, ok := cm.held[id]; ok {
		cm.log.Error("progress record deleted outside the library", "key", protocol.SplitKey(id))
		cm.drop(id, e, messages.EndFenced)
	}
}

// drop ends a held split involuntarily (the root emits Lost).
func (cm *commit) drop(id coordination.SplitID, epoch uint64, reason messages.EndReason) {
	delete(cm.held, id)
	cm.v.send(cm.v.pid.root, messages.TenancyEnded{Split: id, Epoch: epoch, Reason: reason})
}

// finish ends a held split whose completed commit landed (§18.3).
func (cm *commit) finish(id coordination.SplitID, epoch uint64) {
	delete(cm.held, id)
	p := cm.v.pid
	cm.v.send(p.root, messages.TenancyEnded{Split: id, Epoch: epoch, Reason: messages.EndCompleted})

	cm.resolved(messages.HandBackResolved{Split: id, Epoch: epoch, Reason: messages.EndCompleted, Outcome: messages.HandBackLanded})
}

// resolved tells the actors that follow a surrendered split how its
// owner-clearing (or completing) write resolved.
func (cm *commit) resolved(res messages.HandBackResolved) {
	p := cm.v.pid
	cm.v.send(p.lease, res)
	cm.v.send(p.revoke, res)
	cm.v.send(p.assign, res)
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
	v, pid, me := cm.v, c.PID(), cm.v.id
	base, have := cm.records[op.split]
	now := v.nowMs()
	cm.busy[op.split] = true
	// A write with nothing to write on is refused without I/O; its opDone
	// still goes through the inbox so that the queue advances in order.
	refused := !have
	var why error
	switch op.kind {
	case opCommit, opFinal:
		if e, ok := cm.held[op.split]; !ok || e != op.epoch || !have {
			refused, why = true, notHeld(op.split)
		}
	case opFail:
		if refused {
			why = fencedErr(op.split) // the record left the view: nothing was written
		}
	case opClaim:
		refused = refused || (!op.claim.Claim.HasSpec && !op.claim.Claim.Candidate.Quarantine) || cm.departing || cm.verdict
		base = recEntry{rec: op.claim.Claim.Record, rev: op.claim.Claim.RecordRev}
	}
	if refused {
		v.send(pid, opDone{op: op, outcome: casFenced, err: why})
		return
	}
	maxAttempts := v.cfg.MaxAttempts
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
		case opCommit, opFinal:
			d = casHeld(ctx, v, op, base, func(r protocol.ProgressRecord) (protocol.ProgressRecord, error) {
				if err := checkWatermark(op.split, r, op.progress); err != nil {
					return r, err
				}
				return r.Commit(op.progress, now), nil
			})
		case opFail:
			d = casHeld(ctx, v, op, base, func(r protocol.ProgressRecord) (protocol.ProgressRecord, error) {
				return r.Fail(maxAttempts, now), nil
			})
		case opHandBack:
			if base.rec.Owner != me || base.rec.Epoch != op.epoch {
				d = opDone{outcome: casFenced}
				break
			}
			if base.rec.Status.Terminal() {
				d = opDone{outcome: casLanded} // nothing left to hand back
				break
			}
			d = casHeld(ctx, v, op, base, func(r protocol.ProgressRecord) (protocol.ProgressRecord, error) {
				return r.HandBack(now), nil
			})
		case opClaim:
			d = casClaim(ctx, v, op, base, now)
		}
		d.op = op
		v.send(pid, d)
	})
}

// casHeld runs the CAS of a held or just surrendered split with the
// adopt-and-retry-once rule of §18.2.
func casHeld(ctx context.Context, v *env, op recordOp, base recEntry, build func(protocol.ProgressRecord) (protocol.ProgressRecord, error)) opDone {
	key := protocol.SplitKey(op.split)
	what := map[opKind]string{opCommit: "committing", opFinal: "committing", opFail: "failing", opHandBack: "handing back"}[op.kind]
	doing := fmt.Sprintf("%s split %s", what, op.split)
	fenced := fencedErr(op.split)
	for try := 0; ; try++ {
		if base.rec.Status.Terminal() && op.kind != opHandBack {
			return opDone{outcome: casFenced, err: fenced}
		}
		want, err := build(base.rec)
		if err != nil {
			return opDone{outcome: casFatal, err: err, rec: base.rec, rev: base.rev}
		}
		b := protocol.EncodeProgress(want)
		if err := protocol.CheckProgressSize(op.split, len(b), v.cap); err != nil {
			return opDone{outcome: casFatal, err: err, rec: base.rec, rev: base.rev}
		}
		start := time.Now()
		rev, ok, err := v.st.Update(ctx, store.Durable, key, b, store.Revision(base.rev))
		switch {
		case err != nil:
			v.met.write("error", time.Since(start))
			return opDone{outcome: casUnconfirmed, err: storeErr(doing, err), rec: base.rec, rev: base.rev}
		case ok:
			v.met.write("ok", time.Since(start))
			return opDone{outcome: casLanded, rec: want, rev: uint64(rev)}
		}
		v.met.write("conflict", time.Since(start))
		e, found, err := v.st.Get(ctx, store.Durable, key)
		if err != nil {
			return opDone{outcome: casUnconfirmed, err: storeErr(doing, err), rec: base.rec, rev: base.rev}
		}
		var got protocol.ProgressRecord
		if found {
			if got, err = protocol.DecodeProgress(key, e.Value, v.fp.Load()); err != nil {
				return opDone{outcome: casFatal, err: err}
			}
		}
		switch classifyConflict(v.id, op.epoch, want, found, got) {
		case conflictLanded:
			return opDone{outcome: casLanded, rec: got, rev: uint64(e.Revision), adopted: true}
		case conflictFenced:
			d := opDone{outcome: casFenced, err: fenced}
			if found {
				d.rec, d.rev = got, uint64(e.Revision)
			}
			return d
		}
		base = recEntry{rec: got, rev: uint64(e.Revision)}
		if try == 1 {
			return opDone{outcome: casUnconfirmed, err: coordination.Errorf(coordination.Retryable, "%s: the record kept moving under this worker's own writes; retry", doing), rec: got, rev: base.rev}
		}
	}
}

// fencedErr is the Fenced result of a write that lost to another owner.
func fencedErr(id coordination.SplitID) error {
	return coordination.Errorf(coordination.Fenced, "split %s: another worker owns it now; nothing was written", id)
}

// casClaim runs step 3 of the claim protocol (§16.4) or of a quarantine on
// takeover (§19.2).
func casClaim(ctx context.Context, v *env, op recordOp, base recEntry, now int64) opDone {
	key := protocol.SplitKey(op.split)
	cand := op.claim.Claim.Candidate
	e := op.claim.Epoch
	for try := 0; ; try++ {
		if base.rec.Status.Terminal() {
			return opDone{outcome: casFenced}
		}
		var want protocol.ProgressRecord
		if cand.Quarantine {
			want = base.rec.QuarantineOnTakeover(now)
		} else {
			want = base.rec.Claim(v.id, e, cand.Kind.ConsumesAttempt(), now)
		}
		start := time.Now()
		rev, ok, err := v.st.Update(ctx, store.Durable, key, protocol.EncodeProgress(want), store.Revision(base.rev))
		switch {
		case err != nil:
			v.met.write("error", time.Since(start))
			v.fatalIf(err)
			return opDone{outcome: casUnconfirmed, err: err}
		case ok:
			v.met.write("ok", time.Since(start))
			return opDone{outcome: casLanded, rec: want, rev: uint64(rev), kind: cand.Kind, quar: cand.Quarantine}
		}
		v.met.write("conflict", time.Since(start))
		// A claim retries once after adopting a late write; a quarantine
		// that loses gives up (§19.2): re-derived from a handed-back record
		// it would turn into a claim of a split that need not be assigned
		// here, nor fit the lane budget, nor have a spec.
		if try == 1 || cand.Quarantine {
			return opDone{outcome: casFenced}
		}
		ent, found, err := v.st.Get(ctx, store.Durable, key)
		if err != nil || !found {
			return opDone{outcome: casFenced}
		}
		got, err := protocol.DecodeProgress(key, ent.Value, v.fp.Load())
		if err != nil {
			v.fatalIf(err)
			return opDone{outcome: casFenced}
		}
		if got.Status.Terminal() || got.Epoch >= e {
			return opDone{outcome: casFenced, rec: got, rev: uint64(ent.Revision)}
		}
		own := protocol.LeaseRecord{Owner: v.id, Nonce: v.nonce, Epoch: e}
		c2, ok := protocol.Classify(protocol.CandidateInput{Record: got, HasSpec: true, Lease: &own, Me: v.id, MyNonce: v.nonce, MaxAttempts: v.cfg.MaxAttempts})
		if !ok {
			return opDone{outcome: casFenced, rec: got, rev: uint64(ent.Revision)}
		}
		cand.Kind, cand.Quarantine = c2.Kind, c2.Quarantine
		base = recEntry{rec: got, rev: uint64(ent.Revision)}
	}
}

// done applies a finished write.
func (cm *commit) done(c *actor.Context, d opDone) {
	op := d.op
	defer cm.next(c, op.split)
	if d.rev != 0 {
		cm.fold(op.split, d.rec, d.rev)
	}
	switch op.kind {
	case opCommit:
		err := cm.commitResult(op, d)
		if op.replyTo != nil {
			cm.v.send(op.replyTo, messages.CommitSplitReply{Err: err})
		}
	case opFinal:
		err := cm.commitResult(op, d)
		b, ok := cm.finals[op.batch]
		if !ok {
			return
		}
		if d.outcome == casFatal && b.fatal == nil {
			b.fatal = d.err
		}
		b.errs[op.index] = err
		b.settled[op.index] = true
		b.pending--
		if b.pending == 0 {
			cm.replyFinal(op.batch, b)
		}
	case opFail:
		cm.failResult(op, d)
	case opHandBack:
		cm.handBackResult(op, d)
	case opClaim:
		cm.claimResult(op, d)
	}
}

// commitResult turns a commit write outcome into the caller's error.
func (cm *commit) commitResult(op recordOp, d opDone) error {
	switch d.outcome {
	case casLanded:
		if !d.adopted {
			cm.v.send(cm.v.pid.revoke, messages.CommitLanded{Split: op.split, Epoch: op.epoch})
		}
		return nil
	case casFenced:
		if e, ok := cm.held[op.split]; ok && e == op.epoch {
			cm.drop(op.split, e, messages.EndFenced)
		}
		return d.err
	case casFatal:
		if op.kind == opCommit {
			cm.v.failNow(d.err)
		}
		return d.err
	}
	cm.v.fatalIf(d.err)
	return d.err
}

func (cm *commit) finalBatch(c *actor.Context, m messages.CommitFinalBatch) {
	cm.nextBatch++
	id := cm.nextBatch
	b := &finalBatch{errs: m.Errs, replyTo: m.ReplyTo, settled: make([]bool, len(m.Errs)), splits: make([]coordination.SplitID, len(m.Errs))}
	for i, cm := range m.Commits {
		b.splits[i] = cm.Split
		b.settled[i] = m.Errs[i] != nil
	}
	deadline := time.Now().Add(cm.v.cfg.OpTimeout)
	for i, e := range m.Errs {
		if e == nil {
			b.pending++
			cm.enqueue(c, recordOp{kind: opFinal, split: m.Commits[i].Split, epoch: m.Epochs[i], progress: m.Commits[i].Progress, batch: id, index: i, deadline: deadline})
		}
	}
	if b.pending == 0 {
		cm.v.send(b.replyTo, messages.CommitFinalBatchReply{Errs: b.errs})
		return
	}
	cm.finals[id] = b
	v, pid := cm.v, c.PID()
	b.timer = time.AfterFunc(cm.v.cfg.OpTimeout, func() { v.send(pid, finalDeadline{batch: id}) })
}

// replyFinal answers a final batch: entries still unknown get Retryable.
func (cm *commit) replyFinal(id uint64, b *finalBatch) {
	delete(cm.finals, id)
	if b.timer != nil {
		b.timer.Stop()
	}
	errs := make([]error, len(b.errs))
	for i, err := range b.errs {
		if !b.settled[i] {
			err = finalUnconfirmed(b.splits[i], cm.v.cfg.OpTimeout)
		}
		errs[i] = err
	}
	cm.v.send(b.replyTo, messages.CommitFinalBatchReply{Errs: errs})
	if b.fatal != nil {
		cm.v.failNow(b.fatal)
	}
}

func (cm *commit) failResult(op recordOp, d opDone) {
	res := messages.HandBackResolved{Split: op.split, Epoch: op.epoch, Reason: messages.EndFailed}
	var err error
	attempts := d.rec.Attempts
	switch d.outcome {
	case casLanded:
		res.Outcome = messages.HandBackLanded
	case casFenced:
		res.Outcome, err = messages.HandBackFenced, d.err
	case casFatal:
		res.Outcome, err = messages.HandBackUnconfirmed, d.err
		cm.v.failNow(d.err)
	default:
		res.Outcome, err = messages.HandBackUnconfirmed, d.err
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
	b := &handBackBatch{pending: len(m.Splits), replyTo: m.ReplyTo}
	if b.pending == 0 {
		if b.replyTo != nil {
			cm.v.send(b.replyTo, handBackReply(m.Reason, nil))
		}
		return
	}
	cm.handBacks[id] = b
	deadline := time.Now().Add(cm.v.cfg.OpTimeout)
	for _, h := range m.Splits {
		cm.enqueue(c, recordOp{kind: opHandBack, split: h.Split, epoch: h.Epoch, batch: id, reason: m.Reason, deadline: deadline})
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
	res := messages.HandBackResolved{Split: op.split, Epoch: op.epoch, Reason: op.reason}
	switch d.outcome {
	case casLanded:
		res.Outcome = messages.HandBackLanded
		if op.reason == messages.EndReleased || op.reason == messages.EndDeparted {
			cm.v.met.released()
		}
	case casFenced:
		res.Outcome = messages.HandBackFenced
	default:
		res.Outcome = messages.HandBackUnconfirmed
		if d.outcome == casFatal {
			cm.v.failNow(d.err)
		}
		cm.log.Warn("hand-back did not confirm; the lease will expire", "split", op.split, "error", d.err)
	}
	if op.reason == messages.EndRevoked {
		if res.Outcome == messages.HandBackFenced {
			cm.v.met.lost("fenced")
		} else {
			cm.v.met.lost("revoked")
		}
	}
	cm.resolved(res)
	b, ok := cm.handBacks[op.batch]
	if !ok {
		return
	}
	if res.Outcome == messages.HandBackUnconfirmed {
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
	p := cm.v.pid
	cl := op.claim
	id := op.split
	if d.outcome != casLanded {
		cm.v.send(p.lease, messages.DeleteLease{Split: id, Rev: cl.LeaseRev})
		cm.v.send(p.assign, messages.ClaimAbandoned{Split: id})
		return
	}
	if d.quar {
		cm.log.Warn("split quarantined after exhausting its attempts", "split", id, "attempts", d.rec.Attempts)
		cm.v.send(p.lease, messages.DeleteLease{Split: id, Rev: cl.LeaseRev})
		cm.v.send(p.assign, messages.ClaimAbandoned{Split: id})
		return
	}
	cm.held[id] = cl.Epoch
	cm.v.met.acquired(d.kind.AcquisitionReason())
	cm.log.Debug("split claimed", "split", id, "epoch", cl.Epoch, "kind", d.kind.String())
	cm.v.send(p.root, messages.ClaimWon{Spec: cl.Claim.Spec, Epoch: cl.Epoch, Progress: d.rec.Progress(), Kind: d.kind, LeaseRev: cl.LeaseRev})
}

// judge evaluates the verdict gate (§22.1) and lists when it passes.
func (cm *commit) judge() {
	if cm.verdict || cm.judging || cm.departing || !cm.hasPlan || cm.plan.Finality != coordination.PlanFinal {
		return
	}
	n := len(cm.records)
	if uint64(n) < cm.plan.Planned || cm.completed+cm.quarant != n {
		return
	}
	cm.judging = true
	v, pid := cm.v, cm.v.pid.commit
	v.goFunc(func(ctx context.Context) {
		oc, cancel := v.opCtx(ctx)
		defer cancel()
		es, err := v.st.List(oc, store.Durable, protocol.PrefixSplit)
		if err != nil {
			v.send(pid, verdictListed{err: err})
			return
		}
		m := verdictListed{}
		for _, e := range es {
			rec, err := protocol.DecodeProgress(e.Key, e.Value, v.fp.Load())
			if err != nil {
				v.send(pid, verdictListed{err: err})
				return
			}
			m.recs = append(m.recs, rec)
			m.revs = append(m.revs, uint64(e.Revision))
		}
		v.send(pid, m)
	})
}

func (cm *commit) listed(m verdictListed) {
	// The listing is applied to the view (§22.2) while judging is still
	// set, so the folds do not start another listing.
	for i, rec := range m.recs {
		cm.fold(rec.ID, rec, m.revs[i])
	}
	cm.judging = false
	if m.err != nil {
		if !cm.v.fatalIf(m.err) {
			cm.log.Warn("verdict listing failed; will retry", "error", m.err)
		}
		return
	}
	if cm.verdict || cm.departing {
		return
	}
	stalled, completed, quarantined, ok := verdict(m.recs, cm.plan.Planned)
	if !ok {
		return
	}
	cm.verdict = true
	cm.v.send(cm.v.pid.root, messages.VerdictReached{Stalled: stalled, Completed: completed, Quarantined: quarantined})
}
