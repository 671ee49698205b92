package splitwriter

import (
	"context"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
)

// The fenced writes of split records the split-writer actor runs on its
// goroutines for a held or just surrendered tenancy: fail, hand-back,
// leftover return and completion (docs/protocol.md, "Hand-back, fail,
// quarantine").

// endTenancy writes end (the hand-back or the completion) on the split
// record of surrendered tenancy epoch, if the record still names this
// worker at that epoch; doing names the write for error reasons.
func endTenancy(ctx context.Context, v *worker.Env, fp uint64, id coordination.SplitID, epoch uint64, doing string, base worker.SplitEntry, end func(protocol.SplitRecord) protocol.SplitRecord) splitWritten {
	switch worker.JudgeSurrender(base.Rec, v.ID, epoch) {
	case worker.SurrenderFenced:
		return splitWritten{Outcome: worker.CASFenced}
	case worker.SurrenderNothing:
		return splitWritten{Outcome: worker.CASLanded}
	}
	return casSplit(ctx, v, fp, id, epoch, doing, base, end)
}

// casSplit runs a CAS on the split record of tenancy epoch, which this
// worker holds (or has just surrendered), with the adopt-and-retry-once
// rule (worker/cas.go): a lost CAS whose record still names this session at epoch
// moved because of an earlier write of this worker that landed unseen. A
// terminal record is never written: the write is fenced. doing ("handing
// back") names the write for error reasons.
func casSplit(ctx context.Context, v *worker.Env, fp uint64, id coordination.SplitID, epoch uint64, doing string, base worker.SplitEntry, build func(protocol.SplitRecord) protocol.SplitRecord) splitWritten {
	nonce := base.Rec.Nonce
	fenced := worker.FencedErr(id)
	return worker.CASAdopt(ctx, v, worker.CASWrite[protocol.SplitRecord]{
		Split: id,
		Key:   protocol.SplitKey(id),
		Doing: doing,
		Build: func(base protocol.SplitRecord) (protocol.SplitRecord, []byte, *splitWritten) {
			if base.Status.Terminal() {
				return base, nil, &splitWritten{Outcome: worker.CASFenced, Err: fenced}
			}
			want := build(base)
			return want, protocol.EncodeSplit(want), nil
		},
		Classify: func(want protocol.SplitRecord, found bool, got protocol.SplitRecord) worker.ConflictClass {
			return classifySplitConflict(v.ID, nonce, epoch, want, found, got)
		},
		Decode: func(key string, b []byte) (protocol.SplitRecord, error) { return protocol.DecodeSplit(key, b, fp) },
	}, base.Rec, base.Rev)
}

// classifySplitConflict judges the split record got against the write
// intended by the tenancy epoch of me's session nonce.
func classifySplitConflict(me, nonce string, epoch uint64, intended protocol.SplitRecord, found bool, got protocol.SplitRecord) worker.ConflictClass {
	switch {
	case !found:
		return worker.ConflictFenced
	case got == intended || sameSplitWrite(intended, got):
		return worker.ConflictLanded
	case got.Owner == me && got.Nonce == nonce && got.Epoch == epoch && got.Status == protocol.StatusRunnable:
		return worker.ConflictAdopt
	}
	return worker.ConflictFenced
}

// sameSplitWrite reports whether got carries the intended write (the
// advisory time aside).
func sameSplitWrite(intended, got protocol.SplitRecord) bool {
	got.WrittenAtMs = intended.WrittenAtMs
	return got == intended
}

// movedAway reports whether split record rec shows that tenancy t of me
// ended: a later epoch, or another owner or session.
func movedAway(rec *protocol.SplitRecord, me string, t worker.Tenancy) bool {
	return rec.Epoch > t.Epoch || (rec.Epoch == t.Epoch && (rec.Owner != me || rec.Nonce != t.Nonce))
}
