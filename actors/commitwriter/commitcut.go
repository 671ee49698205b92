package commitwriter

import (
	"bytes"
	"context"
	"fmt"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
)

// The owner's side of a runtime split (docs/protocol.md, "Runtime split",
// "The steps"): the cut commit (step 2) is a commit of the tenancy that
// also narrows the split to the primary and records the cut; once it is
// known to have landed the shard creates the residual's records (step 3,
// worker.CreateResidual). Until the residual is confirmed the tenancy makes
// no other cut, and a completing commit first confirms it: a parent
// completes only after its residuals exist.

// commitCut runs CommitCut's request on the held tenancy of cell: the cut
// commit, then the residual's records. The result names the residual once
// both are confirmed; a Retryable error leaves the cut either not made or
// durable and unconfirmed (the caller retries with the same cut); Fenced
// writes and creates nothing.
func (w *commitWriter) commitCut(req CommitRequest, cell *progressCell) CommitResult {
	id, epoch, cut := req.Split, req.Epoch, *req.Cut
	cell.cutting = true
	prev := cell.prog.Cut
	if own := cell.ownCut(cell.prog); own == nil || !sameCut(cell.prog, own, cut) ||
		!cell.prog.Commit(req.Progress, 0).SameProgress(cell.prog) {
		// Write the cut, or, for a retry of the latest one, the newer
		// progress.
		d := casProgress(req.Ctx, w.v, id, cell, req.Progress, &cut)
		if d.Outcome != worker.CASLanded {
			return w.notLanded(id, epoch, d)
		}
		if w.landed(id, epoch, cell, d) {
			// An earlier completing Commit of the tenancy landed unseen (the
			// read-back found it): the split is done, the cut was not made.
			return CommitResult{Err: worker.CompletedBeforeCut(id)}
		}
		if c := cell.prog.Cut; c != nil && (prev == nil || c.ID != prev.ID) {
			w.v.Metrics.CutLanded()
		}
	}
	c := cell.ownCut(cell.prog)
	if c == nil || !sameCut(cell.prog, c, cut) {
		// Not reachable: a landed cut commit carries its cut.
		return CommitResult{Landed: true, Err: coordination.Errorf(coordination.Retryable, "split %s: the cut commit landed without its cut; retry", id)}
	}
	if cell.pendingIn(cell.prog) != nil {
		if err := cell.confirm(req.Ctx, w.v, id, *c); err != nil {
			w.v.FatalIf(err)
			return CommitResult{Landed: true, Err: err}
		}
	}
	cell.cutting = false
	return CommitResult{Landed: true, Residual: c.ID}
}

// cutProgress returns the record a cut commit of cut (nil: a completing
// commit of a tenancy whose cut is pending) writes over base, a record of
// this tenancy (docs/protocol.md, "Runtime split", "The steps");
// casProgress asks it for those two and writes every other commit as
// base.Commit. A completing commit first confirms the pending cut (step 3;
// I/O). A cut commit of the cut base already carries as this tenancy's
// latest (a retry, whatever its first attempt's reply said) only commits
// p: it never makes a second residual of one cut. While base carries this
// tenancy's cut whose residual is not confirmed, a cut commit of another
// cut is refused (Retryable).
func (c *progressCell) cutProgress(ctx context.Context, v *worker.Env, id coordination.SplitID, base protocol.ProgressRecord, p coordination.SplitProgress, cut *coordination.Cut, now int64) (protocol.ProgressRecord, error) {
	pending := c.pendingIn(base)
	if cut == nil {
		if pending != nil {
			if err := c.confirm(ctx, v, id, *pending); err != nil {
				return base, err
			}
		}
		return base.Commit(p, now), nil
	}
	if own := c.ownCut(base); own != nil && sameCut(base, own, *cut) {
		return base.Commit(p, now), nil
	}
	if pending != nil {
		return base, cutUnconfirmed(id, pending.ID)
	}
	if bytes.Equal(cut.Primary, cut.Residual) {
		return base, cutRefused(id, "its residual descriptor is byte-equal to its primary (%d bytes), so the rest of the range would never be read (the source's TrySplit is wrong: testkit.CheckSplitter rejects it)", len(cut.Primary))
	}
	next, ok := base.NextCut(cut.Residual, cut.ResidualWeight)
	if !ok {
		return base, cutRefused(id, "tenancy %d has made the most cuts a tenancy can", c.epoch)
	}
	spec := protocol.EncodeSpec(next.ResidualSpec(c.fp, c.gen))
	if n := len(spec); v.ValueCap > 0 && n > v.ValueCap {
		return base, cutRefused(id, "the residual's spec record would be %d bytes (residual descriptor %d bytes), above the store's value cap of %d bytes", n, len(cut.Residual), v.ValueCap)
	}
	want := base.CommitCut(p, cut.Primary, next, now)
	if n := len(protocol.EncodeProgress(want)); v.ValueCap > 0 && n > v.ValueCap {
		return base, cutRefused(id, "the progress record with the cut would be %d bytes (primary descriptor %d bytes, residual descriptor %d bytes, state %d bytes), above the store's value cap of %d bytes",
			n, len(cut.Primary), len(cut.Residual), len(p.State), v.ValueCap)
	}
	return want, nil
}

// cutRefused is the refusal of a cut that can never be made
// (docs/protocol.md, "Runtime split", "Refused cuts"): Retryable, matching
// coordination.ErrCutRefused, nothing written; the reason names the split
// and why (format, args).
func cutRefused(id coordination.SplitID, format string, args ...any) error {
	return &coordination.Error{Kind: coordination.Retryable, Err: coordination.ErrCutRefused,
		Reason: fmt.Sprintf("split %s: cut refused, nothing written: ", id) + fmt.Sprintf(format, args...) +
			"; the split stays un-cut: commit without the cut and hand it back, and its next tenancy reads the whole rest of its range (make TrySplit refuse such cuts, or keep its descriptors smaller)"}
}

// ownCut returns the cut r carries when this tenancy made it, or nil.
func (c *progressCell) ownCut(r protocol.ProgressRecord) *protocol.Cut {
	if r.Cut != nil && r.Cut.Epoch == c.epoch {
		return r.Cut
	}
	return nil
}

// pendingIn returns the cut of this tenancy that r carries while its
// residual is not confirmed, or nil.
func (c *progressCell) pendingIn(r protocol.ProgressRecord) *protocol.Cut {
	if k := c.ownCut(r); k != nil && k.Counter > c.confirmed {
		return k
	}
	return nil
}

// confirm runs step 3 for cut k of the cell's tenancy, durable in its
// progress record, and records it confirmed.
func (c *progressCell) confirm(ctx context.Context, v *worker.Env, id coordination.SplitID, k protocol.Cut) error {
	if err := worker.CreateResidual(ctx, v, c.fp, id, k, c.gen); err != nil {
		return err
	}
	c.confirmed = max(c.confirmed, k.Counter)
	return nil
}

// sameCut reports whether the cut k that record r carries is cut: the same
// residual and primary descriptors (a retry of one CommitCut).
func sameCut(r protocol.ProgressRecord, k *protocol.Cut, cut coordination.Cut) bool {
	return bytes.Equal(k.Descriptor, cut.Residual) && bytes.Equal(r.Descriptor, cut.Primary)
}

// cutUnconfirmed is the Retryable refusal of a cut while the tenancy's
// previous cut (residual id) is not confirmed.
func cutUnconfirmed(id, residual coordination.SplitID) error {
	return coordination.Errorf(coordination.Retryable, "previous cut of %s not yet confirmed (residual %s); retry that cut, with the same descriptors, until it returns", id, residual)
}
