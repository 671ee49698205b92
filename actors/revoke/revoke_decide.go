package revoke

import (
	"time"

	"github.com/spate-go/coordination/actors/internal/wire"
)

// revocation is one revocation entry (docs/protocol.md, "Revocation").
type revocation struct {
	epoch        uint64
	started      time.Time
	lastProgress time.Time
	cancelled    bool
	ended        bool // the split writer ended the tenancy (TenancyEnded); its hand-back's outcome settles the entry
}

// revokeAction is what docs/protocol.md "Following the assignment" prescribes for one held split.
type revokeAction int

const (
	revokeNothing revokeAction = iota
	revokeRequest              // begin a revocation, or re-request a cancelled one
	revokeCancel               // the split is named here again
)

// decideRevocation applies the table of docs/protocol.md "Following the assignment" to one held split.
func decideRevocation(assigned bool, e *revocation) revokeAction {
	switch {
	case assigned && e != nil && !e.cancelled:
		return revokeCancel
	case !assigned && (e == nil || e.cancelled):
		return revokeRequest
	}
	return revokeNothing
}

// revokeDeadline is what a revocation's clock says (docs/protocol.md, "Revocation").
type revokeDeadline int

const (
	deadlineNone   revokeDeadline = iota
	deadlineForced                // a live entry passed DrainDeadline
	deadlineSilent                // a cancelled entry had no progress for DrainDeadline
)

// judgeDeadline checks one entry against the clock.
func judgeDeadline(e revocation, now time.Time, drain time.Duration) revokeDeadline {
	switch {
	case !e.cancelled && now.Sub(e.started) >= drain:
		return deadlineForced
	case e.cancelled && now.Sub(e.lastProgress) >= drain:
		return deadlineSilent
	}
	return deadlineNone
}

// deadlineAt is when judgeDeadline first finds e due: a live entry's drain
// deadline, or when a cancelled one will have been silent for drain.
func deadlineAt(e revocation, drain time.Duration) time.Time {
	if e.cancelled {
		return e.lastProgress.Add(drain)
	}
	return e.started.Add(drain)
}

// judgeResolution settles a revocation from how its tenancy's end resolved
// (docs/protocol.md, "Revocation"): drained when a voluntary hand-back or a
// completion landed, forced otherwise (a Fail, a fence, a hand-back that
// did not confirm).
func judgeResolution(reason wire.EndReason, o wire.HandBackOutcome) string {
	if reason != wire.EndFailed && o == wire.HandBackLanded {
		return "drained"
	}
	return "forced"
}
