package commitwriter

import (
	"context"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// Exactly-once commits (coordination.TxCommitter; docs/protocol.md,
// "Exactly-once commits"): the shard writes the progress record with the
// caller's statements in the store's transaction (store.TxUpdater), so the
// sink's rows and the progress that covers them land together or not at
// all. The fence is the usual one: the compare-and-swap of the tenancy's
// progress record at the revision the cell holds; a lost one rolls the
// statements back. A lost reply is decided by the read-back as for any
// commit (worker.CASAdopt): the intended progress found there means the
// statements landed with it and are not run again; the tenancy's own
// record at another progress is adopted and the write (statements
// included) retried once, each attempt a transaction of its own, unless
// that record already holds the commit's watermark (covers): a later
// write of the tenancy (a cut commit) built on the commit landed unseen.
//
// A tenancy that committed with statements writes its progress only that
// way: the source's ordinary commits carry a watermark acknowledged after
// the batch that its exactly-once commit already made durable, or an
// older one, so a non-completing ordinary commit of such a tenancy lands
// at once without a write (the record is at or past it), and a cut commit
// keeps the record's progress when it is ahead of the commit's (raise).

// commitPayload runs a commit of a tenancy that commits with statements:
// the exactly-once commit req carries, or an ordinary commit after one.
func (w *commitWriter) commitPayload(req CommitRequest, cell *progressCell) CommitResult {
	id, epoch := req.Split, req.Epoch
	if req.Payload == nil && !req.Progress.Completed {
		return CommitResult{Landed: true} // superseded by the exactly-once commits
	}
	cell.payloads = true
	wr := payloadWrite(req.Ctx, w.v, id, cell, req.Progress, req.Payload)
	d := worker.CASAdopt(req.Ctx, w.v, wr, cell.prog, cell.rev)
	if d.Outcome != worker.CASLanded {
		return w.notLanded(id, epoch, d)
	}
	if w.landed(id, epoch, cell, d) && req.Payload != nil && !req.Progress.Completed {
		// A completing commit of the tenancy landed unseen before this one:
		// its statements did not run.
		return CommitResult{Err: worker.FencedErr(id)}
	}
	return CommitResult{Landed: true}
}

// payloadWrite is commitPayload's part in the CAS loop: casProgress's,
// with the statements run in each attempt's transaction, when there are
// any.
func payloadWrite(ctx context.Context, v *worker.Env, id coordination.SplitID, cell *progressCell, p coordination.SplitProgress, payload store.TxFunc) worker.CASWrite[protocol.ProgressRecord] {
	wr := progressWrite(ctx, v, id, cell, p, nil)
	if payload == nil {
		return wr
	}
	wr.Payload = payload
	// A record deleted outside the library is not recreated by a commit
	// with statements; the tenancy's next ordinary commit does
	// (docs/protocol.md, "Missing records").
	wr.Recreate = nil
	build := wr.Build
	wr.Build = func(base protocol.ProgressRecord) (protocol.ProgressRecord, []byte, *worker.CASResult[protocol.ProgressRecord]) {
		if covers(base, v.ID, cell.epoch, p) {
			return base, nil, &worker.CASResult[protocol.ProgressRecord]{Outcome: worker.CASLanded, Rec: base, Adopted: true}
		}
		return build(base)
	}
	return wr
}

// covers reports whether the record base, this tenancy's, already holds
// progress p of an exactly-once commit: its watermark is at or past p's.
// Only this tenancy's exactly-once commits move its watermark past where
// the tenancy started, and each of them is past the one before, so the
// commit of p landed unseen (an earlier attempt whose reply was lost,
// which a later write, a cut commit, built on): its statements must not
// run again.
func covers(base protocol.ProgressRecord, me string, epoch uint64, p coordination.SplitProgress) bool {
	return base.Epoch == epoch && base.Owner == me && base.Watermark != nil && *base.Watermark >= p.Watermark && !base.Completed
}

// raise returns the progress a commit of p over the record base writes: p,
// except for a tenancy that commits with statements, whose non-completing
// commit below base's watermark keeps base's progress (an ordinary commit
// or a cut commit whose watermark an exactly-once commit overtook);
// casProgress asks it only for such a tenancy.
func (c *progressCell) raise(base protocol.ProgressRecord, p coordination.SplitProgress) coordination.SplitProgress {
	if !c.payloads || p.Completed || base.Watermark == nil || p.Watermark >= *base.Watermark {
		return p
	}
	if bp := base.Progress(); bp != nil && !bp.Completed {
		return *bp
	}
	return p
}
