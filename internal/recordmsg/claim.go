package recordmsg

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

// ClaimWon reports that a claim won and fenced the progress record: the
// split-writer actor holds the split at Epoch; the root registers the tenancy and
// emits Gained.
type ClaimWon struct {
	Spec coordination.SplitSpec
	// Generation is the spec record's generation: the spec of a residual
	// cut from the split copies it (docs/protocol.md, "Runtime split").
	Generation uint64
	Epoch      uint64
	Nonce      string // the session that claimed it
	// Fence is the progress record the claim fenced, at FenceRev; Gained
	// carries its progress.
	Fence    protocol.ProgressRecord
	FenceRev uint64
}
