package splitwriter

import (
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
)

// departLeftovers returns the writes that hand back, in Depart's batch,
// every split record the split-writer actor's view shows naming this session
// that this worker does not hold: a claim whose reply was lost (or a
// hand-back that did not confirm) left it (docs/protocol.md, "Departure").
// Without them the next claimant would find a record of an ended session
// and take it over as Expired, charging an attempt. held are the splits
// the batch hands back anyway. Each write re-checks the view when it
// starts, after any earlier write on its split.
func (sw *splitWriterActor) departLeftovers(held []wire.HeldSplit, batch uint64, deadline time.Time) []splitOp {
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
	_, held := sw.reg.held[id]
	return !held && rec.Status == protocol.StatusRunnable && rec.Owner == sw.v.ID && rec.Nonce == sw.nonce
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
	sw.settleBatch(op.batch, op.split, wire.EndDeparted, false)
}
