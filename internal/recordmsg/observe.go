package recordmsg

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

// RecordObserved is a split record put applied to the view: one item of
// a RecordsObserved.
type RecordObserved struct {
	Split  coordination.SplitID
	Record protocol.SplitRecord
	Rev    uint64
}

// RecordsObserved is a run of split record puts applied to the view, in
// the order they were applied: the watch actor sends the puts of a burst of
// watch events, or of a listing, as one message per subscriber, so that a
// subscriber handles one message per burst rather than one per record. Any
// other observation ends the run first, so every subscriber still sees the
// observations in the order they were applied. Records is shared by the
// subscribers: a receiver must not modify it.
type RecordsObserved struct {
	Records []RecordObserved
}

// LeaderObserved is a leader value put.
type LeaderObserved struct {
	Leader protocol.LeaderRecord
	Rev    uint64
}

// PlanObserved is a plan record put (fingerprint already checked).
type PlanObserved struct {
	Plan protocol.PlanRecord
	Rev  uint64
}

// AssignmentObserved is an assignment record put.
type AssignmentObserved struct {
	Instance   string
	Assignment protocol.AssignmentRecord
	Rev        uint64
}
