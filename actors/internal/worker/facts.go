package worker

import "github.com/spate-go/coordination"

// AssignedSet is the set of splits this worker's assignment record names.
// Its owner is the assign actor (actors/assign), which applies each record
// and tells the split writer the diff (AssignedSetChanged); the claimer's
// copy, the input of its claims and of the revocation rules, is the one
// docs/architecture.md ("One owner per fact") lists as still kept.
type AssignedSet map[coordination.SplitID]bool

// LiveSessions maps each live member of the fleet to the session nonce its
// presence record carries, as the watch observes them (PresenceChanged).
// No actor owns it yet: the leader's fleet view and the split writer's
// claimer each keep one, both fed by the same observations
// (docs/architecture.md, "One owner per fact").
type LiveSessions map[string]string
