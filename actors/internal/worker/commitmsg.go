package worker

import (
	"context"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
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

// CommitRequest asks for one commit of progress on the tenancy (split,
// epoch) whose Gained Poll handed out; reply (capacity 1), set when the
// request is posted, gets its result. Cut, when set, makes it a cut commit
// (CommitCut; docs/protocol.md, "Runtime split", "The steps").
type CommitRequest struct {
	Ctx      context.Context // bounds the write (OpTimeout, the stop)
	Split    coordination.SplitID
	Epoch    uint64
	Progress coordination.SplitProgress
	Cut      *coordination.Cut
	// Payload, when set, makes it an exactly-once commit (CommitTx;
	// commitpayload.go): the statements run in the write's transaction.
	Payload store.TxFunc
	Reply   chan CommitResult
}

// CommitResult is a commit's outcome: err is Commit's (or CommitCut's)
// result; landed says the write is durable; residual is the id of a cut
// commit's residual once it is confirmed.
type CommitResult struct {
	Err      error
	Landed   bool
	Residual coordination.SplitID
}

// commitDesk is the commit writer as the other parts of a worker reach it
// (PostCommit, AskCommit).
type commitDesk interface {
	// Post queues msg on the shard of the split it concerns, behind what
	// was posted there before.
	Post(msg any)
	// Ask hands req to its split's shard and waits for the result.
	Ask(req CommitRequest) CommitResult
}
