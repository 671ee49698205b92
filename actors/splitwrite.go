package actors

import (
	"context"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

// The fenced writes of split records the split-writer actor runs on its
// goroutines for a held or just surrendered tenancy: fail, hand-back,
// leftover return and completion (docs/protocol.md, "Hand-back, fail,
// quarantine").

// endTenancy writes end (the hand-back or the completion) on the split
// record of surrendered tenancy epoch, if the record still names this
// worker at that epoch; doing names the write for error reasons.
func endTenancy(ctx context.Context, v *env, id coordination.SplitID, epoch uint64, doing string, base recEntry, end func(protocol.SplitRecord) protocol.SplitRecord) splitWritten {
	switch judgeSurrender(base.rec, v.id, epoch) {
	case surrenderFenced:
		return splitWritten{outcome: casFenced}
	case surrenderNothing:
		return splitWritten{outcome: casLanded}
	}
	return casSplit(ctx, v, id, epoch, doing, base, end)
}

// casSplit runs a CAS on the split record of tenancy epoch, which this
// worker holds (or has just surrendered), with the adopt-and-retry-once
// rule (cas.go): a lost CAS whose record still names this session at epoch
// moved because of an earlier write of this worker that landed unseen. A
// terminal record is never written: the write is fenced. doing ("handing
// back") names the write for error reasons.
func casSplit(ctx context.Context, v *env, id coordination.SplitID, epoch uint64, doing string, base recEntry, build func(protocol.SplitRecord) protocol.SplitRecord) splitWritten {
	nonce := base.rec.Nonce
	fenced := fencedErr(id)
	return casAdopt(ctx, v, casWrite[protocol.SplitRecord]{
		split: id,
		key:   protocol.SplitKey(id),
		doing: doing,
		build: func(base protocol.SplitRecord) (protocol.SplitRecord, []byte, *splitWritten) {
			if base.Status.Terminal() {
				return base, nil, &splitWritten{outcome: casFenced, err: fenced}
			}
			want := build(base)
			return want, protocol.EncodeSplit(want), nil
		},
		classify: func(want protocol.SplitRecord, found bool, got protocol.SplitRecord) conflictClass {
			return classifySplitConflict(v.id, nonce, epoch, want, found, got)
		},
		decode: protocol.DecodeSplit,
	}, base.rec, base.rev)
}

// classifySplitConflict judges the split record got against the write
// intended by the tenancy epoch of me's session nonce.
func classifySplitConflict(me, nonce string, epoch uint64, intended protocol.SplitRecord, found bool, got protocol.SplitRecord) conflictClass {
	switch {
	case !found:
		return conflictFenced
	case got == intended || sameSplitWrite(intended, got):
		return conflictLanded
	case got.Owner == me && got.Nonce == nonce && got.Epoch == epoch && got.Status == protocol.StatusRunnable:
		return conflictAdopt
	}
	return conflictFenced
}

// sameSplitWrite reports whether got carries the intended write (the
// advisory time aside).
func sameSplitWrite(intended, got protocol.SplitRecord) bool {
	got.WrittenAtMs = intended.WrittenAtMs
	return got == intended
}

// movedAway reports whether split record rec shows that tenancy t of me
// ended: a later epoch, or another owner or session.
func movedAway(rec protocol.SplitRecord, me string, t tenancy) bool {
	return rec.Epoch > t.epoch || (rec.Epoch == t.epoch && (rec.Owner != me || rec.Nonce != t.nonce))
}
