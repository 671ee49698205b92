// Package leader is the leader-planning actor of one worker: the election
// (leader key, generation fence), the planner runs with their seeding, and
// the publisher of the assignment records, over one fleet view
// (docs/protocol.md, "Leadership", "Planning", "Assignment and the rebalance
// delay"; docs/architecture.md, "The leader").
//
// It imports no other actor's package: it reaches them only by message.
package leader
