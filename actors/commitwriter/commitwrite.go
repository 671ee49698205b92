package commitwriter

import (
	"context"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// casProgress runs a commit of progress p on the tenancy whose progress
// record cell holds (docs/protocol.md, "Commits"), with the
// adopt-and-retry-once rule (worker/cas.go) for a conflict caused by this
// tenancy's own earlier write; cut, when set, makes it a cut commit
// (nextProgress, commitcut.go). A regressing watermark or an oversized
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
			p := cell.raise(base, p) // commitpayload.go
			if err := checkWatermark(id, base, p); err != nil {
				return base, nil, &worker.CASResult[protocol.ProgressRecord]{Outcome: worker.CASFatal, Err: err}
			}
			want, err := cell.nextProgress(ctx, v, id, base, p, cut, now)
			if err != nil {
				oc := worker.CASUnconfirmed
				if coordination.KindOf(err) == coordination.Fatal {
					oc = worker.CASFatal
				}
				return base, nil, &worker.CASResult[protocol.ProgressRecord]{Outcome: oc, Err: err}
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
