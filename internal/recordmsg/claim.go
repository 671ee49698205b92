package recordmsg

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

// ClaimSplit asks the split-writer actor to claim a split, or to quarantine it on
// takeover (docs/protocol.md, "Claim protocol"): Record and RecordRev are
// the view's split record.
type ClaimSplit struct {
	Candidate protocol.Candidate
	Record    protocol.SplitRecord
	RecordRev uint64
}

// ReturnLeftover asks the split-writer actor to hand back a split record that
// names this session although the worker neither holds nor is assigned the
// split (a write of its own landed unseen).
type ReturnLeftover struct {
	Split     coordination.SplitID
	Record    protocol.SplitRecord
	RecordRev uint64
}

// ClaimWon reports that a claim won and fenced the progress record: the
// split-writer actor holds the split at Epoch; the root registers the tenancy and
// emits Gained.
type ClaimWon struct {
	Spec  coordination.SplitSpec
	Epoch uint64
	Nonce string // the session that claimed it
	// Fence is the progress record the claim fenced, at FenceRev; Gained
	// carries its progress.
	Fence    protocol.ProgressRecord
	FenceRev uint64
}
