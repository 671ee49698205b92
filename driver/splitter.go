package driver

import "github.com/spate-go/coordination"

// Splitter is an optional extension of [Source] that lets a running lane be
// cut in two, so that a fleet whose other lanes ran dry does not wait for
// the owner of one large split (docs/protocol.md, "Runtime split"; Beam's
// RestrictionTracker.trySplit). The lane keeps the primary, the part of its
// range before the cut; the residual, the rest, becomes a new split that
// any worker reads from its start. A source that does not implement it
// behaves exactly as before: its splits are never cut.
//
// [Run] (through [Driver.ReportRemaining] and [Driver.Cut]) calls them
// from its own goroutine only, never concurrently with a [Source] or
// [Reader] method, while the lane's reader goroutine keeps reading: both
// methods must be safe against the lane's own reader. The coordinator must
// implement coordination.Cutter (the actors' and testkit's do); with one
// that does not, they are never called.
type Splitter interface {
	// Remaining returns an estimate of the lane's remaining work, in the
	// units of its split's weight (the planner's SplitSpec.Weight): what a
	// fresh lane of the split would report is about its weight, and what
	// remains shrinks as the lane reads. It must be cheap; it is called at
	// most once per commit interval. 0 means nothing left, or unknown: the
	// lane is then never asked to cut.
	Remaining(lane LaneID) uint64
	// TrySplit cuts the lane's remaining range so that the primary keeps
	// about keep (0.5 up to, not including, 1) of what remains and the
	// residual gets the rest. It must not block on I/O for long.
	//
	// After ok the lane never reads past the cut; the primary and the
	// residual are disjoint and together exactly the lane's range from the
	// split's start; everything the lane already read (acknowledged or not)
	// is in the primary, whose watermarks and state keep their meaning
	// under the primary's descriptor. It returns !ok, changing nothing,
	// when the lane cannot be cut (too little left, below the source's own
	// minimum, not at a cuttable point). A non-nil error also means nothing
	// changed; the lane goes on reading its whole range.
	TrySplit(lane LaneID, keep float64) (cut Cut, ok bool, err error)
}

// Cut is what a successful [Splitter.TrySplit] returns: the two
// descriptors of the cut lane, in the source's own encoding, and the
// residual's weight ([coordination.Cut]). The library derives the
// residual's split id (from the parent's id, its tenancy's epoch and a
// counter, so that a retried cut never creates a second residual) and
// records both descriptors durably before the residual can be claimed.
type Cut = coordination.Cut
