package coordination

import "errors"

// ErrCutRefused matches, through errors.Is, the error of a
// [Cutter.CommitCut] that refused its cut for good (docs/protocol.md,
// "Runtime split", "Refused cuts"): a residual byte-equal to its primary,
// or descriptors too large for the store's value cap. It is a Retryable
// *Error whose reason names the split, the sizes and the cap. Nothing was
// written: the split is still held, un-cut, at its last landed commit. The
// same cut is refused again, and the lane no longer reads past the cut, so
// the caller commits its progress without the cut and hands the split back
// (Release): its next tenancy reads the rest of the range un-cut.
// driver.Cut does exactly that.
var ErrCutRefused = errors.New("cut refused")

// Cut is a cut of a held split's remaining range (docs/protocol.md,
// "Runtime split"): the owner keeps the primary, the split's range up to
// the cut, and the residual, the rest of it, becomes a new split that any
// worker reads from its start. The library derives the residual's id from
// the split's id, its tenancy's epoch and a counter, so a retried cut never
// creates a second residual.
type Cut struct {
	// Primary describes what the owner keeps, in the source's encoding:
	// every later tenancy of the split is handed it in place of the split's
	// original descriptor, with the split's committed progress.
	Primary []byte
	// Residual describes the rest of the range, from the cut on.
	Residual []byte
	// ResidualWeight estimates the residual's work in the split's weight
	// units, for balancing; 0 is treated as 1.
	ResidualWeight uint64
}

// Cutter is the optional extension of [Coordinator] that runs runtime
// splits (docs/protocol.md, "Runtime split"). The coordinators of package
// actors and of testkit implement it; a driver type-asserts its Coordinator
// to Cutter and, when it cannot, never cuts.
type Cutter interface {
	Coordinator
	// ReportRemaining records the estimate of a held split's remaining work
	// at the tenancy of epoch, in the split's weight units (0: nothing left
	// or unknown). It never blocks and writes nothing by itself: the few
	// largest estimates ride on the worker's next presence write, where the
	// leader reads them to decide cuts. An estimate of a split not held at
	// epoch is ignored.
	ReportRemaining(split SplitID, epoch LeaseEpoch, remaining uint64)
	// CommitCut durably commits progress of a held split together with cut,
	// then creates the residual split, and returns the residual's id. nil
	// means both are durable: the residual is placed like any split.
	// Fenced means this call wrote nothing and the split is gone: stop the
	// lane (a cut an earlier call made durable is rolled forward by the
	// split's next claimant). Retryable means the cut may or may not have
	// landed: the lane must not read past the cut, and the caller calls
	// CommitCut again with the same cut (and any later progress) until it
	// returns nil or Fenced. An error matching [ErrCutRefused] means the
	// cut was refused for good and nothing was written: commit the progress
	// without the cut and hand the split back. progress.Completed must be
	// false: a split completes only after its residual exists.
	CommitCut(split SplitID, progress SplitProgress, cut Cut) (SplitID, error)
}
