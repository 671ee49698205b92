package worker

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

// OpenCell hands the commit writer a started tenancy's progress record as
// its claim's fence left it. The root posts it before the tenancy's Gained.
type OpenCell struct {
	FP    uint64 // H(the job's fingerprint), which the tenancy's records carry
	Split coordination.SplitID
	Epoch uint64
	Prog  protocol.ProgressRecord
	Rev   uint64
	// Generation is the split's spec generation, which the spec of a
	// residual cut from it copies (docs/protocol.md, "Runtime split").
	Generation uint64
}

// commitDesk is the commit writer as the actors reach it (PostCommit); the
// handle asks it its commits directly (commitwriter.Writers.Ask).
type commitDesk interface {
	// Post queues msg on the shard of the split it concerns, behind what
	// was posted there before.
	Post(msg any)
}
