package actors

import (
	"context"
	"fmt"

	"github.com/spate-go/coordination/internal/protocol"
)

// The fenced writes of split records the commit actor runs on its
// goroutines for a held or just surrendered tenancy: fail, hand-back,
// leftover return and completion (docs/protocol.md, "Hand-back, fail,
// quarantine").

// endTenancy writes the hand-back or completion of a surrendered split, if
// the split record still names this worker at the tenancy's epoch.
func endTenancy(ctx context.Context, v *env, op recordOp, base recEntry, now int64) opDone {
	switch judgeSurrender(base.rec, v.id, op.epoch) {
	case surrenderFenced:
		return opDone{outcome: casFenced}
	case surrenderNothing:
		return opDone{outcome: casLanded}
	}
	return casSplit(ctx, v, op, base, func(r protocol.SplitRecord) protocol.SplitRecord {
		if op.kind == opComplete {
			return r.Complete(now)
		}
		return r.HandBack(now)
	})
}

// casSplit runs a CAS on a split record this worker holds (or has just
// surrendered) with the adopt-and-retry-once rule (cas.go): a lost CAS
// whose record still names this session at op's epoch moved because of an
// earlier write of this worker that landed unseen. A terminal record is
// never written: the write is fenced.
func casSplit(ctx context.Context, v *env, op recordOp, base recEntry, build func(protocol.SplitRecord) protocol.SplitRecord) opDone {
	nonce := base.rec.Nonce
	fenced := fencedErr(op.split)
	r := casAdopt(ctx, v, casWrite[protocol.SplitRecord]{
		split: op.split,
		key:   protocol.SplitKey(op.split),
		doing: fmt.Sprintf("%s split %s", opVerb[op.kind], op.split),
		build: func(base protocol.SplitRecord) (protocol.SplitRecord, []byte, *casResult[protocol.SplitRecord]) {
			if base.Status.Terminal() {
				return base, nil, &casResult[protocol.SplitRecord]{outcome: casFenced, err: fenced}
			}
			want := build(base)
			return want, protocol.EncodeSplit(want), nil
		},
		classify: func(want protocol.SplitRecord, found bool, got protocol.SplitRecord) conflictClass {
			return classifySplitConflict(v.id, nonce, op.epoch, want, found, got)
		},
		decode: protocol.DecodeSplit,
	}, base.rec, base.rev)
	return opDone{outcome: r.outcome, err: r.err, rec: r.rec, rev: r.rev, adopted: r.adopted}
}

// opVerb names what a write does, for error reasons.
var opVerb = map[opKind]string{opFail: "failing", opHandBack: "handing back", opLeftover: "handing back", opDepartLeftover: "handing back", opComplete: "completing"}
