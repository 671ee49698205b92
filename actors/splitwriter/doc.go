// Package splitwriter is the split-writer actor of one worker, its
// assignment-diffing actor: it follows this worker's assignment record and
// diffs it (docs/protocol.md, "Following the assignment"), decides the
// claims by it and does every fenced write on a split record (claim with
// its progress fence, completion, fail, hand-back, quarantine, leftover
// returns), and takes the job's verdict (docs/protocol.md, "Claim
// protocol", "Hand-back, fail, quarantine", "Completion").
//
// It imports no other actor's package: it reaches them only by message.
package splitwriter
