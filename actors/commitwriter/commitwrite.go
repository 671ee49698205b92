package commitwriter

import (
	"context"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// A commit, from the shard's turn to the store (docs/protocol.md,
// "Commits"; docs/architecture.md, "The commit path"): commit checks the
// tenancy's cell, casProgress builds the record (checkWatermark, then
// the record's Commit rule) and runs the adopt-and-retry loop
// (worker.CASAdopt) on progress.<id> at the cell's revision, and landed or
// notLanded tells the actors the outcome. A cut commit (commitcut.go) and
// an exactly-once one (commitpayload.go) take the same loop with their own
// steps.

// commit writes one commit and tells the actors its outcome: CommitLanded
// to revoke, EndTenancy to the split writer when it completed the split or
// found the tenancy fenced.
func (w *commitWriter) commit(req CommitRequest) CommitResult {
	id, epoch := req.Split, req.Epoch
	cell := w.cells[id]
	if cell == nil || cell.epoch != epoch {
		return CommitResult{Err: worker.NotHeld(id)}
	}
	if req.Cut != nil {
		return w.commitCut(req, cell) // commitcut.go
	}
	if req.Payload != nil || cell.payloads {
		return w.commitPayload(req, cell) // commitpayload.go
	}
	d := casProgress(req.Ctx, w.v, id, cell, req.Progress, nil)
	if d.Outcome == worker.CASLanded {
		w.landed(id, epoch, cell, d)
		return CommitResult{Landed: true}
	}
	return w.notLanded(id, epoch, d)
}

// landed records a commit of the cell's tenancy that landed (d) and tells
// the revoke actor, unless it was an earlier attempt found landed. When the
// record landed completed (this commit's, or an earlier completing one
// found by the read-back), it closes the cell, asks the split writer to end
// the tenancy and reports completed.
func (w *commitWriter) landed(id coordination.SplitID, epoch uint64, cell *progressCell, d worker.CASResult[protocol.ProgressRecord]) (completed bool) {
	cell.advance(d.Rec, d.Rev)
	if !d.Adopted {
		w.v.Tell(wire.CommitLanded{Split: id, Epoch: epoch}, w.v.PIDs.Revoke)
	}
	if d.Rec.Completed {
		w.close(id, epoch)
		w.endTenancy(id, epoch, wire.EndCompleted)
	}
	return d.Rec.Completed
}

// notLanded settles a commit of tenancy (id, epoch) that did not land (d):
// a fenced one ends the tenancy, a Fatal one latches.
func (w *commitWriter) notLanded(id coordination.SplitID, epoch uint64, d worker.CASResult[protocol.ProgressRecord]) CommitResult {
	switch d.Outcome {
	case worker.CASFenced:
		w.close(id, epoch)
		w.endTenancy(id, epoch, wire.EndFenced)
	case worker.CASFatal:
		w.v.FailNow(d.Err)
	default:
		w.v.FatalIf(d.Err)
	}
	return CommitResult{Err: d.Err}
}

// endTenancy asks the split writer, the tenancy registry's owner, to end
// tenancy (id, epoch) for reason (a completed or fenced commit).
func (w *commitWriter) endTenancy(id coordination.SplitID, epoch uint64, reason wire.EndReason) {
	w.v.Tell(wire.EndTenancy{Split: id, Epoch: epoch, Reason: reason}, w.v.PIDs.SplitWriter)
}

// casProgress runs a commit of progress p on the tenancy whose progress
// record cell holds (docs/protocol.md, "Commits"), with the
// adopt-and-retry-once rule (worker/cas.go) for a conflict caused by this
// tenancy's own earlier write; cut, when set, makes it a cut commit
// (cutProgress, commitcut.go). A regressing watermark or an oversized
// record is Fatal before any write.
func casProgress(ctx context.Context, v *worker.Env, id coordination.SplitID, cell *progressCell, p coordination.SplitProgress, cut *coordination.Cut) worker.CASResult[protocol.ProgressRecord] {
	return worker.CASAdopt(ctx, v, progressWrite(ctx, v, id, cell, p, cut), cell.prog, cell.rev)
}

// progressWrite is casProgress's part in the CAS loop.
func progressWrite(ctx context.Context, v *worker.Env, id coordination.SplitID, cell *progressCell, p coordination.SplitProgress, cut *coordination.Cut) worker.CASWrite[protocol.ProgressRecord] {
	now := v.NowMs()
	return worker.CASWrite[protocol.ProgressRecord]{
		Split: id,
		Key:   protocol.ProgressKey(id),
		Doing: "committing",
		Build: func(base protocol.ProgressRecord) (protocol.ProgressRecord, []byte, *worker.CASResult[protocol.ProgressRecord]) {
			p := p
			if cell.payloads {
				p = cell.raise(base, p) // commitpayload.go
			}
			if err := checkWatermark(id, base, p); err != nil {
				return base, nil, &worker.CASResult[protocol.ProgressRecord]{Outcome: worker.CASFatal, Err: err}
			}
			want := base.Commit(p, now)
			if cut != nil || (p.Completed && cell.pendingIn(base) != nil) {
				// A cut commit, or the completion of a tenancy whose cut is
				// not confirmed yet: the cut's steps (commitcut.go).
				var err error
				if want, err = cell.cutProgress(ctx, v, id, base, p, cut, now); err != nil {
					oc := worker.CASUnconfirmed
					if coordination.KindOf(err) == coordination.Fatal {
						oc = worker.CASFatal
					}
					return base, nil, &worker.CASResult[protocol.ProgressRecord]{Outcome: oc, Err: err}
				}
			}
			b := protocol.EncodeProgress(want)
			if err := protocol.CheckProgressSize(id, len(b), v.ValueCap); err != nil {
				return base, nil, &worker.CASResult[protocol.ProgressRecord]{Outcome: worker.CASFatal, Err: err}
			}
			return want, b, nil
		},
		Classify: func(want protocol.ProgressRecord, found bool, got protocol.ProgressRecord) worker.ConflictClass {
			return classifyProgressConflict(v.ID, cell.epoch, want, found, got)
		},
		Decode: func(key string, b []byte) (protocol.ProgressRecord, error) {
			return protocol.DecodeProgress(key, b, cell.fp)
		},
		Recreate: func(ctx context.Context, b []byte) (store.Entry, bool, bool, error) {
			return recreateProgress(ctx, v, cell.fp, id, cell.epoch, b)
		},
		Rollback: true,
		Rebased:  cell.advance,
	}
}

// recreateProgress heals a progress record deleted outside the library
// under a live tenancy (docs/protocol.md, "Missing records"): no write of
// the protocol deletes one, so the tenancy recreates it with the commit it
// meant to write (b), which carries everything it committed before: nothing
// regresses. It first reads the split record (the rollback check): the
// record below this tenancy's epoch proves the store lost writes (a
// rolled-back store lost the progress record with them; recreating it at
// this epoch would fence every claim of the restored record) and is Fatal;
// a later tenancy's record or none means this tenancy is over, and nothing
// is recreated. A lost create means a claimant's fence recreated it first:
// the record is read again (e, found) for the usual conflict rules.
func recreateProgress(ctx context.Context, v *worker.Env, fp uint64, id coordination.SplitID, epoch uint64, b []byte) (e store.Entry, found, recreated bool, err error) {
	if mine, err := splitStillHeld(ctx, v, fp, id, epoch); err != nil || !mine {
		return store.Entry{}, false, false, err
	}
	key := protocol.ProgressKey(id)
	r, ok, err := v.Store.Create(ctx, store.Durable, key, b)
	switch {
	case err != nil:
		return store.Entry{}, false, false, err
	case ok:
		v.Log.Warn("progress record missing (deleted outside the library); recreated from this tenancy's commit", "split", id, "key", key, "epoch", epoch)
		return store.Entry{Key: key, Value: b, Revision: r}, true, true, nil
	}
	e, found, err = v.Store.Get(ctx, store.Durable, key)
	return e, found, false, err
}

// splitStillHeld reads split id's record for recreateProgress: true when
// it still names this worker at epoch; Fatal (a store rollback) when its
// epoch is below epoch, which this tenancy's claim wrote.
func splitStillHeld(ctx context.Context, v *worker.Env, fp uint64, id coordination.SplitID, epoch uint64) (bool, error) {
	key := protocol.SplitKey(id)
	e, found, err := v.Store.Get(ctx, store.Durable, key)
	if err != nil || !found {
		return false, err
	}
	rec, err := protocol.DecodeSplit(key, e.Value, fp)
	switch {
	case err != nil:
		return false, err
	case rec.Epoch < epoch:
		return false, worker.SplitEpochRolledBack(v.Raw, key, rec.Epoch, epoch)
	}
	return rec.Epoch == epoch && rec.Owner == v.ID, nil
}

// checkWatermark enforces "progress never regresses" before any write: a
// commit below the committed watermark is Fatal.
func checkWatermark(id coordination.SplitID, rec protocol.ProgressRecord, p coordination.SplitProgress) error {
	if rec.Watermark != nil && p.Watermark < *rec.Watermark {
		return coordination.Errorf(coordination.Fatal, "split %s: commit watermark %d is below the committed watermark %d; a source must never move a watermark backwards", id, p.Watermark, *rec.Watermark)
	}
	return nil
}

// classifyProgressConflict judges the progress record got (found=false:
// absent) against a commit intended by tenancy epoch of me.
func classifyProgressConflict(me string, epoch uint64, intended protocol.ProgressRecord, found bool, got protocol.ProgressRecord) worker.ConflictClass {
	switch {
	case !found || got.Epoch != epoch || got.Owner != me:
		return worker.ConflictFenced
	case intended.SameProgress(got) || got.Completed:
		return worker.ConflictLanded // this tenancy's write, or its completion, landed unseen
	}
	return worker.ConflictAdopt
}
