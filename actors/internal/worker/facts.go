package worker

import "github.com/spate-go/coordination"

// AssignedSet is the set of splits this worker's assignment record names.
// Its owner is the split writer's claimer (actors/splitwriter), which
// applies each record, diffs it and decides the claims and the revocation
// rules' input by it; the leader's cached assignment records are the copy
// docs/architecture.md ("One owner per fact") lists as still kept.
type AssignedSet map[coordination.SplitID]bool
