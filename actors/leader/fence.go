package leader

import (
	"bytes"
	"context"
	"slices"

	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// generationFenceTries bounds the fence's compare-and-swap attempts before the term
// steps down.
const generationFenceTries = 3

// generationFence CASes the plan record from base at rev to generation gen
// (docs/protocol.md, "Leadership"); fingerprint is this worker's job. It runs
// on a goroutine of the term's lead and returns fenceLanded with the plan
// it wrote, fenceNewer, or fenceFatal.
func generationFence(ctx context.Context, v *worker.Env, gen uint64, base protocol.PlanRecord, rev uint64, fingerprint string) fenceDone {
	var unknown [][]byte // this fence's writes whose replies were errors: they may have landed
	for range generationFenceTries {
		if base.Generation >= gen {
			return fenceDone{step: fenceNewer}
		}
		want := base
		want.Generation = gen
		want.UpdatedAtMs = v.NowMs()
		b := protocol.EncodePlan(want)
		oc, cancel := v.OpCtx(ctx)
		r, ok, err := v.Store.Update(oc, store.Durable, protocol.KeyPlan, b, store.Revision(rev))
		step, err := judgeFenceWrite(ok, err)
		if step == fenceRetry {
			unknown = append(unknown, b)
		}
		if step == fenceRead {
			var pl protocol.PlanRecord
			var at store.Revision
			step, pl, at, err = readFenceBase(oc, v, fingerprint)
			if step == fenceRebase && slices.ContainsFunc(unknown, func(u []byte) bool { return bytes.Equal(u, protocol.EncodePlan(pl)) }) {
				// An earlier write of this fence landed unseen: the plan
				// carries this generation, not a newer leader's.
				cancel()
				return fenceDone{step: fenceLanded, plan: pl, rev: uint64(at)}
			}
			if step == fenceRebase {
				base, rev = pl, uint64(at)
			}
		}
		cancel()
		switch step {
		case fenceLanded:
			return fenceDone{step: fenceLanded, plan: want, rev: uint64(r)}
		case fenceFatal:
			return fenceDone{step: fenceFatal, err: err}
		}
	}
	return fenceDone{step: fenceNewer}
}

// readFenceBase reads the plan record after a lost fence compare and judges
// it: fenceRebase with the record and its revision, fenceRetry, or
// fenceFatal.
func readFenceBase(ctx context.Context, v *worker.Env, fingerprint string) (fenceStep, protocol.PlanRecord, store.Revision, error) {
	e, found, getErr := v.Store.Get(ctx, store.Durable, protocol.KeyPlan)
	var pl protocol.PlanRecord
	var decodeErr error
	if getErr == nil && found {
		pl, decodeErr = protocol.DecodePlan(protocol.KeyPlan, e.Value)
	}
	step, err := judgeFenceRead(getErr, found, pl, decodeErr, fingerprint)
	return step, pl, e.Revision, err
}
