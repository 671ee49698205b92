package driver

import "github.com/spate-go/coordination"

// Source is what a coordinated source implements: the driver calls it, from
// the embedder's control goroutine only, to open, commit, drain and close the
// lanes of the splits this worker holds. No method may block on data.
//
// Embed [SourceDefaults] for the optional behaviours (resume validation,
// end-of-input hints and cooperative drains).
type Source interface {
	// OpenSplit builds the lane for a gained split, decoding o.Split's
	// descriptor and starting exactly at o.Resume (the beginning when nil).
	// It keeps o.Waker. A failure is returned from PollEvents and the open is
	// retried on the next call with a fresh LaneID; a split that cannot be
	// opened because of its content should be reported as poison instead.
	OpenSplit(o Opening) error
	// ValidateResume checks progress carried by a gained split against its
	// descriptor (pins, versions, watermark inside the split). A rejection is
	// treated as poison: it is logged, the split is failed (Fail: one
	// attempt charged, quarantined at the attempt cap) and never opened,
	// and the run goes on; the rejection is not returned by PollEvents.
	ValidateResume(spec coordination.SplitSpec, p coordination.SplitProgress) error
	// EncodeCommit snapshots committable progress at an acknowledged
	// watermark. It sets Completed only when the split is fully delivered and
	// acknowledged, and never for a split it is draining.
	EncodeCommit(split coordination.SplitID, watermark int64) (coordination.SplitProgress, error)
	// Sweep returns terminal progress for a held split that is complete but
	// got no new watermark (an empty split, or one whose last ack was already
	// committed), else nil. It may be called before the lane is open and
	// returns nil then.
	Sweep(split coordination.SplitID) (*coordination.SplitProgress, error)
	// CloseSplit ends a tenancy: it detaches the lane without blocking and
	// drops the split's state. It must tolerate a split that was never
	// opened. The driver calls no other method for the tenancy afterwards.
	CloseSplit(split coordination.SplitID)
	// TakeFinishing returns the splits whose lanes reached end of input since
	// the last call (an edge, not a level).
	TakeFinishing() []coordination.SplitID
	// BeginRevoke stops intake at a safe boundary while keeping commit
	// state. It returns false for a split that is not open, already closed,
	// or complete; the driver then declines the revocation.
	BeginRevoke(split coordination.SplitID) bool
	// DrainReady returns non-completed progress once every emitted record is
	// acknowledged and that watermark is a replay-free cut, else nil. It is
	// level-triggered: it returns the cut on every call until the driver
	// retires the split. A source that accepted BeginRevoke must eventually
	// return a cut.
	DrainReady(split coordination.SplitID) (*coordination.SplitProgress, error)
}

// SourceDefaults implements the optional parts of [Source]; embed it in a
// source that does not need them. It accepts every resume, reports no end of
// input, refuses every revocation (so the driver declines them) and never
// has a drain cut.
type SourceDefaults struct{}

// ValidateResume accepts every carried progress.
func (SourceDefaults) ValidateResume(coordination.SplitSpec, coordination.SplitProgress) error {
	return nil
}

// TakeFinishing returns nil.
func (SourceDefaults) TakeFinishing() []coordination.SplitID { return nil }

// BeginRevoke returns false.
func (SourceDefaults) BeginRevoke(coordination.SplitID) bool { return false }

// DrainReady returns (nil, nil).
func (SourceDefaults) DrainReady(coordination.SplitID) (*coordination.SplitProgress, error) {
	return nil, nil
}
