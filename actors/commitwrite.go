package actors

import (
	"context"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// casProgress runs a commit of progress p on the tenancy whose progress
// record cell holds (docs/protocol.md, "Commits"), with the
// adopt-and-retry-once rule (cas.go) for a conflict caused by this
// tenancy's own earlier write. A regressing watermark or an oversized
// record is Fatal before any write.
func casProgress(ctx context.Context, v *env, id coordination.SplitID, cell *progressCell, p coordination.SplitProgress) casResult[protocol.ProgressRecord] {
	now := v.nowMs()
	return casAdopt(ctx, v, casWrite[protocol.ProgressRecord]{
		split: id,
		key:   protocol.ProgressKey(id),
		doing: "committing",
		build: func(base protocol.ProgressRecord) (protocol.ProgressRecord, []byte, *casResult[protocol.ProgressRecord]) {
			if err := checkWatermark(id, base, p); err != nil {
				return base, nil, &casResult[protocol.ProgressRecord]{outcome: casFatal, err: err}
			}
			want := base.Commit(p, now)
			b := protocol.EncodeProgress(want)
			if err := protocol.CheckProgressSize(id, len(b), v.cap); err != nil {
				return base, nil, &casResult[protocol.ProgressRecord]{outcome: casFatal, err: err}
			}
			return want, b, nil
		},
		classify: func(want protocol.ProgressRecord, found bool, got protocol.ProgressRecord) conflictClass {
			return classifyProgressConflict(v.id, cell.epoch, want, found, got)
		},
		decode: protocol.DecodeProgress,
		recreate: func(ctx context.Context, b []byte) (store.Entry, bool, bool, error) {
			return recreateProgress(ctx, v, id, cell.epoch, b)
		},
		rollback: true,
		rebased:  cell.advance,
	}, cell.prog, cell.rev)
}

// recreateProgress heals a progress record deleted outside the library
// under a live tenancy (docs/protocol.md, "Missing records"): no write of
// the protocol deletes one, so the tenancy recreates it with the commit it
// meant to write (b), which carries everything it committed before: nothing
// regresses. A lost create means a claimant's fence recreated it first: the
// record is read again (e, found) for the usual conflict rules.
func recreateProgress(ctx context.Context, v *env, id coordination.SplitID, epoch uint64, b []byte) (e store.Entry, found, recreated bool, err error) {
	key := protocol.ProgressKey(id)
	r, ok, err := v.st.Create(ctx, store.Durable, key, b)
	switch {
	case err != nil:
		return store.Entry{}, false, false, err
	case ok:
		v.log.Warn("progress record missing (deleted outside the library); recreated from this tenancy's commit", "split", id, "key", key, "epoch", epoch)
		return store.Entry{Key: key, Value: b, Revision: r}, true, true, nil
	}
	e, found, err = v.st.Get(ctx, store.Durable, key)
	return e, found, false, err
}
