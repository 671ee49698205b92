// Package assign is the assignment-diffing actor of one worker: it follows
// this worker's assignment record, diffs it against the held tenancies, and
// asks the split writer to claim what it is newly named for (and to return
// leftovers); what it is no longer named for it tells the revoke actor
// (docs/protocol.md, "Following the assignment", "Claim candidates").
//
// Like every actor package under actors/, it reaches the other actors only by
// messages, sent to the PIDs it was given at spawn (worker.PIDs); it imports no
// other actor's package (docs/architecture.md, "The actors of one worker").
package assign
