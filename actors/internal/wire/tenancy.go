package wire

import (
	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
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

// EndTenancy asks the split writer, the owner of the tenancy registry, to
// end tenancy Epoch of Split: the commit writer sends it when a commit was
// fenced or completed. The split writer ignores it unless
// that tenancy is held.
type EndTenancy struct {
	Split  coordination.SplitID
	Epoch  uint64
	Reason EndReason
}

// TenancyEnded tells revoke that a held tenancy ended; the split writer
// sends it before every write the end calls for (the commit writer learns
// the end as its cell closes, worker.CellChanged). It is sent once per
// tenancy, after the tenancy's Gained was raised.
type TenancyEnded struct {
	Split  coordination.SplitID
	Epoch  uint64
	Reason EndReason
}

// EventsRaised carries to the root, the outbox's one writer, the seam
// events the split writer raised, in the order it applied what raised
// them: a tenancy's start (Gained, after its progress cell was opened) and
// involuntary end (Lost: E1, E3), revoke's request for a held tenancy
// (RevokeRequested, E6), a split record's transition to quarantined
// (Quarantined) and the verdict (Stalled or AllComplete). The root queues
// them in this order under the rules that are its own: nothing but a
// Gained after the verdict, no RevokeRequested or verdict once Depart
// began, one Quarantined per split (E5), one verdict.
type EventsRaised struct {
	Events []coordination.Event
	// Decline, set with the Lost of a DeclineRevoke's forced revocation, is
	// the DeclineRevoke's reply PID: the root answers it
	// messages.DeclineRevokeReply once the Lost is queued.
	Decline *actor.PID
	// Departed lists the tenancies Depart's own hand-back batch ended (no
	// event): the root reports them as not confirmed if Depart's bound
	// passes before the batch's answer (DepartHandedBack).
	Departed []coordination.SplitID
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
// write of a surrendered split, so the revoke actor settles the entry (the
// split writer, which made the write, frees the split for its claims at
// once).
type HandBackResolved struct {
	Split   coordination.SplitID
	Epoch   uint64
	Reason  EndReason
	Outcome HandBackOutcome
}

// CutRequested is a cut the commit writer judged due for a held tenancy
// (docs/protocol.md, "Runtime split", "Who decides"): the root, the
// outbox's one writer, appends Event for the driver to poll.
type CutRequested struct {
	Event coordination.CutRequested
}
