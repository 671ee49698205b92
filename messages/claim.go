package messages

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

// ClaimSplit asks the split-writer actor to claim a split, or to quarantine it on
// takeover (docs/protocol.md, "Claim protocol"): Record and RecordRev are
// the view's split record.
type ClaimSplit struct {
	Candidate protocol.Candidate
	Record    protocol.SplitRecord
	RecordRev uint64
}

// ReturnLeftover asks the split-writer actor to hand back a split record that
// names this session although the worker neither holds nor is assigned the
// split (a write of its own landed unseen).
type ReturnLeftover struct {
	Split     coordination.SplitID
	Record    protocol.SplitRecord
	RecordRev uint64
}

// ClaimAbandoned reports that a claim (or a leftover's return) gave up; the
// assign actor frees its slot. The split is a candidate again once the view
// shows a split record newer than Rev, or, when Retry is set (the store
// failed), at the next heartbeat.
type ClaimAbandoned struct {
	Split coordination.SplitID
	Rev   uint64
	Retry bool
}

// AssignedSetChanged carries this worker's assigned set to the revoke
// actor. Decided is false while no assignment record is known.
type AssignedSetChanged struct {
	Decided bool
	Splits  []coordination.SplitID
}
