package worker

import "github.com/spate-go/coordination"

// AssignedSet is the set of splits this worker's assignment record names.
// Its owner is the split writer's claimer (actors/splitwriter), which
// applies each record, diffs it and decides the claims and the revocation
// rules' input by it; the leader's cached assignment records are the copy
// docs/architecture.md ("One owner per fact") lists as still kept.
type AssignedSet map[coordination.SplitID]bool

// LiveSessions maps each live member of the fleet to the session nonce its
// presence record carries, as the watch observes them (PresenceChanged).
// No actor owns it yet: the leader's fleet view and the split writer's
// claimer each keep one, both fed by the same observations
// (docs/architecture.md, "One owner per fact").
type LiveSessions map[string]string
