package messages

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

// ClaimSplit asks the lease actor to write the lease of a claim (or a
// quarantine on takeover), then hand it to the commit actor.
type ClaimSplit struct {
	Candidate protocol.Candidate
	Record    protocol.ProgressRecord // the view's record
	RecordRev uint64
	LeaseRev  uint64 // the observed lease revision for an Update (OwnLease)
	Spec      coordination.SplitSpec
	HasSpec   bool
}

// ClaimRecord asks the commit actor to CAS the record of a claim whose lease
// was written at LeaseRev with Epoch.
type ClaimRecord struct {
	Claim    ClaimSplit
	Epoch    uint64
	LeaseRev uint64
}

// ClaimAbandoned reports that a claim gave up (lost, error, or fenced); the
// assign actor frees its slot.
type ClaimAbandoned struct {
	Split coordination.SplitID
}

// DeleteLease asks the lease actor to delete a lease it wrote for a claim
// that gave up, guarded by Rev.
type DeleteLease struct {
	Split coordination.SplitID
	Rev   uint64
}

// AssignedSetChanged carries this worker's assigned set to the revoke
// actor. Decided is false while no assignment record is known.
type AssignedSetChanged struct {
	Decided bool
	Splits  []coordination.SplitID
}
