package actors

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/commitwriter"
	"github.com/spate-go/coordination/actors/internal/worker"
)

// The actors' coordinator runs runtime splits (docs/protocol.md, "Runtime
// split").
var _ coordination.Cutter = (*Coordinator)(nil)

// CommitCut durably commits progress of a held split together with cut
// (docs/protocol.md, "Runtime split", "The steps"): a fenced CAS of its
// progress record that narrows the split to cut.Primary and records the
// cut, then the creates of the residual's spec and split record. It
// returns the residual's id once both exist: the residual is placed like
// any split, and every later tenancy of this split is handed cut.Primary.
//
// Fenced means this call wrote nothing and the split is gone (fenced by a
// later tenancy, or completed by an earlier Commit whose reply was lost):
// stop the lane. A cut an earlier call made durable but could not confirm
// is rolled forward by the split's next claimant (docs/protocol.md,
// "Runtime split", "Roll-forward"). Retryable means the cut may or may not be durable: the lane must
// not read past the cut, and the caller calls CommitCut again with the same
// cut (and any later progress) until it returns nil or Fenced; while a cut
// is not confirmed, a CommitCut with another cut is refused (Retryable) and
// a completing Commit first creates the pending residual. progress.Completed
// is a Fatal usage error that writes nothing (a split completes only after
// its residual exists); a regressing watermark is Fatal as for Commit. A
// cut that can never be made (a residual byte-equal to its primary,
// descriptors that would take the residual's spec or the progress record
// over the store's value cap) is refused with a Retryable error matching
// coordination.ErrCutRefused, writing nothing and latching nothing
// (docs/protocol.md, "Runtime split", "Refused cuts"). It blocks for at most OpTimeout, and returns shortly
// after the stop channel closes.
func (c *Coordinator) CommitCut(split coordination.SplitID, progress coordination.SplitProgress, cut coordination.Cut) (coordination.SplitID, error) {
	if err := c.gate(); err != nil {
		return "", err
	}
	if progress.Completed {
		return "", worker.CutCompleted(split)
	}
	ctx, stopped := c.stopContext()
	ctx, cancel := c.v.OpCtx(ctx)
	defer cancel()
	epoch := c.out.PolledEpoch(split)
	if epoch == 0 {
		return "", worker.NotHeld(split)
	}
	progress.State = cloneBytes(progress.State)
	cut.Primary, cut.Residual = cloneBytes(cut.Primary), cloneBytes(cut.Residual)
	res := c.commits.Ask(commitwriter.CommitRequest{Ctx: ctx, Split: split, Epoch: epoch, Progress: progress, Cut: &cut})
	if res.Residual == "" && res.Err != nil && stopped() {
		return "", worker.StoppedBeforeDone("cut commit")
	}
	return res.Residual, res.Err
}
