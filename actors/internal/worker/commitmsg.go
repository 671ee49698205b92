package worker

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

// CellChanged opens or closes the commit writer's progress cell of the
// tenancy (Split, Epoch). The split writer, the tenancy registry's owner,
// posts it as the tenancy starts, before its Gained, with the progress
// record as the claim's fence left it, and as the tenancy ends, Closed.
type CellChanged struct {
	Split coordination.SplitID
	Epoch uint64
	// Closed: the tenancy ended and its cell closes; the fields below are
	// unset. Otherwise the tenancy started and its cell opens with them.
	Closed bool
	FP     uint64 // H(the job's fingerprint), which the tenancy's records carry
	Prog   protocol.ProgressRecord
	Rev    uint64 // Prog's revision
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
