package recordmsg

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

// RecordChanged is a change of one split record applied to the view: a
// put, or its deletion. One item of a RecordsChanged.
type RecordChanged struct {
	// Split is the split whose record changed.
	Split coordination.SplitID
	// Record is the record put; zero when Deleted.
	Record protocol.SplitRecord
	// Rev is the revision of the put or the deletion; 0 for a deletion a
	// snapshot or a listing implied.
	Rev uint64
	// Deleted is true when the record was deleted, which only code
	// outside the library does (docs/protocol.md, "Missing records").
	Deleted bool
}

// RecordsChanged is a run of split record changes applied to the view, in
// the order they were applied: the watch actor sends the puts of a burst
// of watch events, or of a listing, as one message per subscriber, so that
// a subscriber handles one message per burst rather than one per record;
// a deletion goes in a run of its own. Any other observation ends the run
// first, so every subscriber still sees the observations in the order
// they were applied. Records is shared by the subscribers: a receiver
// must not modify it.
type RecordsChanged struct {
	Records []RecordChanged
}

// LeaderChanged is a change of the leader key, as one watch event or
// listing shows it: a put of the leader value, or its deletion or expiry.
type LeaderChanged struct {
	// Leader is the value put; zero when Deleted.
	Leader protocol.LeaderRecord
	// Rev is the revision of the put or the deletion; 0 for a deletion a
	// snapshot or a listing implied (Synthesized).
	Rev uint64
	// Deleted is true when the key was deleted or expired.
	Deleted bool
	// Synthesized is true for a deletion a snapshot or a listing implied
	// (the key absent from it), not one a watch event showed.
	Synthesized bool
}

// PlanChanged is a change of the plan record, as one watch event or
// listing shows it: a put (its fingerprint already checked), or its
// deletion, which only code outside the library makes.
type PlanChanged struct {
	// Plan is the record put; zero when Deleted.
	Plan protocol.PlanRecord
	// Rev is the revision of the put or the deletion; 0 for a deletion a
	// snapshot or a listing implied.
	Rev uint64
	// Deleted is true when the record was deleted.
	Deleted bool
}

// AssignmentChanged is a change of one worker's assignment record, as
// one watch event or listing shows it: a put of the record, or its
// deletion.
type AssignmentChanged struct {
	// Instance is the worker the record assigns splits to.
	Instance string
	// Assignment is the record put; zero when Deleted.
	Assignment protocol.AssignmentRecord
	// Rev is the revision of the put or the deletion; 0 for a deletion a
	// snapshot or a listing implied.
	Rev uint64
	// Deleted is true when the record was deleted.
	Deleted bool
}
