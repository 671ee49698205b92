package messages

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

// EndReason says why a tenancy ended.
type EndReason int

const (
	// EndFenced: a peer took the split (involuntary, Lost).
	EndFenced EndReason = iota + 1
	// EndStarved: the worker's session ended (no presence renewal for a
	// full LeaseDuration, or its presence key vanished); involuntary, Lost.
	EndStarved
	// EndRevoked: a forced revocation (involuntary, Lost).
	EndRevoked
	// EndCompleted: a completed commit landed.
	EndCompleted
	// EndFailed: Fail was accepted.
	EndFailed
	// EndReleased: Release handed it back.
	EndReleased
	// EndDrained: ReleaseDrained handed it back.
	EndDrained
	// EndDeparted: Depart handed it back.
	EndDeparted
)

// Involuntary reports whether the end emits Lost.
func (r EndReason) Involuntary() bool {
	return r == EndFenced || r == EndStarved || r == EndRevoked
}

// String returns the metric label spelling of involuntary reasons and a
// short name otherwise.
func (r EndReason) String() string {
	switch r {
	case EndFenced:
		return "fenced"
	case EndStarved:
		return "starved"
	case EndRevoked:
		return "revoked"
	case EndCompleted:
		return "completed"
	case EndFailed:
		return "failed"
	case EndReleased:
		return "released"
	case EndDrained:
		return "drained"
	case EndDeparted:
		return "departed"
	}
	return "unknown"
}

// ClaimWon reports that a claim won and fenced the progress record: the
// commit actor holds the split at Epoch; the root registers the tenancy and
// emits Gained.
type ClaimWon struct {
	Spec  coordination.SplitSpec
	Epoch uint64
	Kind  protocol.ClaimKind
	// Fence is the progress record the claim fenced, at FenceRev; Gained
	// carries its progress.
	Fence    protocol.ProgressRecord
	FenceRev uint64
}

// CommitCompleted reports that a completed commit of tenancy Epoch landed
// (the handle wrote it): the commit actor ends the tenancy and completes
// the split record.
type CommitCompleted struct {
	Split coordination.SplitID
	Epoch uint64
}

// TenancyStarted is the root's broadcast that a tenancy began.
type TenancyStarted struct {
	Split coordination.SplitID
	Epoch uint64
}

// TenancyEnded reports that a tenancy ended. Actors send it to the root,
// which dedupes it and broadcasts it to everyone interested.
type TenancyEnded struct {
	Split  coordination.SplitID
	Epoch  uint64
	Reason EndReason
}

// HandBackOutcome is how an owner-clearing write resolved.
type HandBackOutcome int

const (
	// HandBackLanded: the owner-clear landed (or was moot).
	HandBackLanded HandBackOutcome = iota + 1
	// HandBackFenced: a peer already owned the split.
	HandBackFenced
	// HandBackUnconfirmed: the write errored or timed out.
	HandBackUnconfirmed
)

// HandBackResolved reports the outcome of a hand-back, fail or completion
// write of a surrendered split, so the revoke actor settles the entry and
// the assign actor may claim the split again.
type HandBackResolved struct {
	Split   coordination.SplitID
	Epoch   uint64
	Reason  EndReason
	Outcome HandBackOutcome
}

// SplitQuarantined reports an observed transition to quarantined.
type SplitQuarantined struct {
	Split    coordination.SplitID
	Attempts uint32
}
