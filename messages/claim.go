package messages

import (
	"github.com/spate-go/coordination"
)

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
