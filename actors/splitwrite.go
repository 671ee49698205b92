package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// The fenced writes of split records the commit actor runs on its
// goroutines for a held or just surrendered tenancy: fail, hand-back,
// leftover return and completion (docs/protocol.md, "Hand-back, fail,
// quarantine").

// endTenancy writes the hand-back or completion of a surrendered split, if
// the split record still names this worker at the tenancy's epoch.
func endTenancy(ctx context.Context, v *env, op recordOp, base recEntry, now int64) opDone {
	if base.rec.Owner != v.id || base.rec.Epoch != op.epoch {
		return opDone{outcome: casFenced}
	}
	if base.rec.Status.Terminal() {
		return opDone{outcome: casLanded} // nothing left to hand back or complete
	}
	return casSplit(ctx, v, op, base, func(r protocol.SplitRecord) protocol.SplitRecord {
		if op.kind == opComplete {
			return r.Complete(now)
		}
		return r.HandBack(now)
	})
}

// casSplit runs a CAS on a split record this worker holds (or has just
// surrendered) with the adopt-and-retry-once rule: a lost CAS whose record
// still names this session at op's epoch moved because of an earlier write
// of this worker that landed unseen.
func casSplit(ctx context.Context, v *env, op recordOp, base recEntry, build func(protocol.SplitRecord) protocol.SplitRecord) opDone {
	key := protocol.SplitKey(op.split)
	doing := fmt.Sprintf("%s split %s", opVerb[op.kind], op.split)
	fenced := fencedErr(op.split)
	nonce := base.rec.Nonce
	for try := 0; ; try++ {
		if base.rec.Status.Terminal() {
			return opDone{outcome: casFenced, err: fenced}
		}
		want := build(base.rec)
		start := time.Now()
		rev, ok, err := v.st.Update(ctx, store.Durable, key, protocol.EncodeSplit(want), store.Revision(base.rev))
		v.met.write(writeLabel(ok, err), time.Since(start))
		switch {
		case err != nil:
			return opDone{outcome: casUnconfirmed, err: storeErr(doing, err), rec: base.rec, rev: base.rev}
		case ok:
			return opDone{outcome: casLanded, rec: want, rev: uint64(rev)}
		}
		e, found, err := v.st.Get(ctx, store.Durable, key)
		if err != nil {
			return opDone{outcome: casUnconfirmed, err: storeErr(doing, err), rec: base.rec, rev: base.rev}
		}
		var got protocol.SplitRecord
		if found {
			if got, err = protocol.DecodeSplit(key, e.Value, v.fp.Load()); err != nil {
				return opDone{outcome: casFatal, err: err}
			}
		}
		switch classifySplitConflict(v.id, nonce, op.epoch, want, found, got) {
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
			return opDone{outcome: casUnconfirmed, err: keptMoving(doing), rec: got, rev: base.rev}
		}
	}
}

// opVerb names what a write does, for error reasons.
var opVerb = map[opKind]string{opFail: "failing", opHandBack: "handing back", opLeftover: "handing back", opDepartLeftover: "handing back", opComplete: "completing"}
