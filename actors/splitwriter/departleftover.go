package splitwriter

import (
	"context"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// departLeftovers returns the writes that return, in Depart's batch, every
// leftover of this worker the split-writer actor's view shows (departReturn,
// docs/protocol.md, "Departure"): a claim whose reply was lost or a
// hand-back that did not confirm, and a claim that began no tenancy (it
// outlived its session, or its completion erred) whatever session it
// names, and the split of a claim of this worker in flight, erred, or lost
// to a write the view has not shown yet (perhaps its own, landed unseen),
// whose record the view may not show naming this session (unseen: read
// when its turn comes). Without them the next claimant would find a record
// of an ended session and take it over as Expired, charging an attempt.
// held are the splits the batch hands back anyway. Each write re-checks
// the view when it starts, after any earlier write on its split.
func (sw *splitWriterActor) departLeftovers(held []wire.HeldSplit, batch uint64) []splitOp {
	skip := make(map[coordination.SplitID]bool, len(held))
	for _, h := range held {
		skip[h.Split] = true
	}
	var ops []splitOp
	for id, e := range sw.records {
		if _, ok := sw.departReturn(id, e); ok && !skip[id] {
			skip[id] = true
			ops = append(ops, departLeftoverOp{split: id, batch: batch})
		}
	}
	unseen := func(id coordination.SplitID) {
		if !skip[id] {
			skip[id] = true
			ops = append(ops, departLeftoverOp{split: id, batch: batch, unseen: true})
		}
	}
	for id := range sw.claims.inflight {
		unseen(id)
	}
	for id := range sw.claims.cooldown { // erred: retried at the next heartbeat
		unseen(id)
	}
	for id := range sw.claims.lostAt { // lost to a write the view has not shown yet
		unseen(id)
	}
	return ops
}

// departReturn reports whether e, split id's record in the view, is a
// leftover of this worker that Depart returns, and whether its return is
// the completion rather than a hand-back (docs/protocol.md, "Departure"):
// runnable, naming this worker, not held, and either naming its current
// session or written by a claim of this worker that began no tenancy and
// unchanged since (claimer.stranded), whatever session it names. Such a
// claim's record is completed when the claim's completion erred (its
// progress record is completed), else handed back.
func (sw *splitWriterActor) departReturn(id coordination.SplitID, e worker.SplitEntry) (complete, ok bool) {
	if _, held := sw.reg.held[id]; held || e.Rec.Status != protocol.StatusRunnable || e.Rec.Owner != sw.v.ID {
		return false, false
	}
	if s, stranded := sw.claims.strandedAt(id, e.Rev); stranded {
		return s.complete, true
	}
	return false, e.Rec.Nonce == sw.nonce
}

// departLeftoverResult applies the outcome of a leftover's return. A
// return that does not confirm is not Depart's error (the caller never
// held the split): the record stays a leftover, taken as Expired once the
// session ended, as before.
func (sw *splitWriterActor) departLeftoverResult(op departLeftoverOp, d splitWritten) {
	switch d.Outcome {
	case worker.CASLanded:
		if op.complete {
			sw.log.Debug("completion of a claim of this worker written on departure", "split", op.split, "epoch", op.epoch)
		} else {
			sw.log.Debug("leftover of this worker handed back on departure", "split", op.split, "epoch", op.epoch)
		}
	case worker.CASFatal:
		sw.v.FailNow(d.Err)
	case worker.CASUnconfirmed:
		if op.complete {
			sw.log.Warn("completion of a claim of this worker was not written on departure; its next claimant is charged an attempt, then completes it", "split", op.split, "err", d.Err)
		} else {
			sw.log.Warn("leftover of this worker was not handed back on departure; its next claimant is charged an attempt", "split", op.split, "err", d.Err)
		}
	}
	sw.settleBatch(op.batch, op.split, wire.EndDeparted, false)
}

// returnUnseenClaim returns the record of an unseen leftover (a claim of
// this worker in flight or erred when Depart began, whose record the view
// does not show as a leftover when the return's turn comes): it reads the
// split record and hands it back if it is runnable and names this worker's
// session nonce (docs/protocol.md, "Departure"). A record that does not is
// left alone, reported as a refused write is; the read and the hand-back
// are each bounded by OpTimeout from their start.
func returnUnseenClaim(ctx context.Context, v *worker.Env, fp uint64, op departLeftoverOp, nonce string, now int64) departLeftoverDone {
	key := protocol.SplitKey(op.split)
	rctx, cancel := v.OpCtx(ctx)
	e, found, err := v.Store.Get(rctx, store.Durable, key)
	cancel()
	if err != nil {
		return departLeftoverDone{op: op, res: splitWritten{Outcome: worker.CASUnconfirmed, Err: worker.StoreErr("reading "+key, err)}}
	}
	var rec protocol.SplitRecord
	if found {
		if rec, err = protocol.DecodeSplit(key, e.Value, fp); err != nil {
			return departLeftoverDone{op: op, res: splitWritten{Outcome: worker.CASUnconfirmed, Err: err}}
		}
	}
	if !found || rec.Status != protocol.StatusRunnable || rec.Owner != v.ID || rec.Nonce != nonce {
		return departLeftoverDone{op: op, res: splitWritten{Outcome: worker.CASFenced}}
	}
	op.epoch = rec.Epoch
	wctx, cancel := v.OpCtx(ctx)
	defer cancel()
	return departLeftoverDone{op: op, res: casSplit(wctx, v, fp, op.split, rec.Epoch, "handing back", worker.SplitEntry{Rec: rec, Rev: uint64(e.Revision)}, func(r protocol.SplitRecord) protocol.SplitRecord {
		return r.HandBack(now)
	})}
}
