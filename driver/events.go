package driver

import "github.com/spate-go/coordination"

// LaneID names one opened lane. A fresh LaneID is minted for every open
// attempt of a tenancy and is never reused, not even after a failed open.
type LaneID uint64

// PartitionID names one tenancy's stream of watermarks. A fresh PartitionID is
// minted for every tenancy and is never reused; watermarks passed to
// [Driver.Commit] and [Driver.Shutdown] are keyed by it.
type PartitionID uint64

// Opening is what [Source.OpenSplit] is given to build the lane of a gained
// split.
type Opening struct {
	// Split is the split's spec; its descriptor is all the source knows of it.
	Split coordination.SplitSpec
	// Resume is the carried progress, already accepted by
	// [Source.ValidateResume]; nil when the split starts fresh. For a split
	// re-gained in the batch of its loss it may instead be this worker's
	// own later durable commit of the split (see the package doc).
	Resume *coordination.SplitProgress
	// Epoch is the tenancy's fencing token.
	Epoch coordination.LeaseEpoch
	// Lane is the lane's id.
	Lane LaneID
	// Partition is the tenancy's partition; report its watermarks under it.
	Partition PartitionID
	// Waker is the driver's waker. A lane wakes it only on end of input and
	// on poison, after making that state visible.
	Waker *coordination.Waker
}

// Watermark is an acknowledged position of one partition: one past the last
// acknowledged record, in the source's own encoding.
type Watermark struct {
	// Partition is the tenancy the watermark belongs to.
	Partition PartitionID
	// Value is the acknowledged position inside the split's descriptor.
	Value int64
}

// Lane describes one open lane, as announced by [LanesAdded].
type Lane struct {
	// ID is the lane's id, as passed to OpenSplit.
	ID LaneID
	// Partition keys the lane's watermarks.
	Partition PartitionID
	// Split is the spec of the split the lane reads.
	Split coordination.SplitSpec
	// Epoch is the tenancy's fencing token.
	Epoch coordination.LeaseEpoch
}

// Assignment is one held split with an open lane, as reported by
// [Driver.Assignments].
type Assignment struct {
	// Split is the held split.
	Split coordination.SplitID
	// Lane is its open lane.
	Lane LaneID
	// Partition keys its watermarks.
	Partition PartitionID
}

// Event is what [Driver.PollEvents] returns. The interface is sealed: exactly
// [LanesAdded], [LanesRevoked], [LanesRetired], [CommitReady], [Drained] and
// [Idle] implement it. Use a type switch.
type Event interface{ isEvent() }

// LanesAdded announces opened lanes; reading them may start.
type LanesAdded struct{ Lanes []Lane }

// LanesRevoked announces lanes whose tenancy ended without a handover (lost,
// fenced or failed). Stop reading them before the next PollEvents and discard
// whatever is not committed; their later watermarks are ignored.
type LanesRevoked struct{ Lanes []LaneID }

// LanesRetired announces lanes whose tenancy ended cleanly (completed, or
// handed off after a drain); nothing is in flight on them.
type LanesRetired struct{ Lanes []LaneID }

// CommitReady is a latency hint: these partitions reached end of input, so
// commit them soon.
type CommitReady struct{ Partitions []PartitionID }

// Drained reports that the job is over for this worker: every split
// completed (or, with [WithDrainOnStall], the job stalled). Call Shutdown.
type Drained struct{}

// Idle reports that nothing happened before the PollEvents timeout or a wake.
type Idle struct{}

func (LanesAdded) isEvent()   {}
func (LanesRevoked) isEvent() {}
func (LanesRetired) isEvent() {}
func (CommitReady) isEvent()  {}
func (Drained) isEvent()      {}
func (Idle) isEvent()         {}
