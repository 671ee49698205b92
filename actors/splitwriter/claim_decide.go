package splitwriter

import (
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
)

// fenceResult is how a progress fence resolved (docs/protocol.md, "Claim
// protocol").
type fenceResult int

const (
	fenceWon        fenceResult = iota + 1 // the progress record carries the claim's epoch
	fenceCompleted                         // the progress record is completed
	fenceSuperseded                        // a later claim fenced it first
	fenceFailed                            // store errors, or it kept moving
)

// judgeProgressFence decides a claim's progress fence from the record got
// read before writing it: done is false when the fence must be written
// (raise got to the claim's epoch); otherwise res is how it resolved
// without a write.
func judgeProgressFence(got protocol.ProgressRecord, epoch uint64) (res fenceResult, done bool) {
	switch {
	case got.Epoch >= epoch:
		return fenceSuperseded, true
	case got.Completed:
		return fenceCompleted, true
	}
	return 0, false
}

// judgeClaimWrite classifies the reply to a claim's (or a quarantine's)
// compare-and-swap of the split record: a lost compare means another
// worker moved the record first, so the claim is fenced; a store error
// leaves its fate unknown.
func judgeClaimWrite(ok bool, err error) worker.CASOutcome {
	switch {
	case err != nil:
		return worker.CASUnconfirmed
	case ok:
		return worker.CASLanded
	}
	return worker.CASFenced
}
