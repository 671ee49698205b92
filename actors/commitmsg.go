package actors

import (
	"context"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

// openCell hands the commit writer a started tenancy's progress record as
// its claim's fence left it. The root posts it before the tenancy's Gained.
type openCell struct {
	split coordination.SplitID
	epoch uint64
	prog  protocol.ProgressRecord
	rev   uint64
}

// commitRequest asks for one commit of progress on the tenancy (split,
// epoch) whose Gained Poll handed out; reply (capacity 1), set when the
// request is posted, gets its result.
type commitRequest struct {
	ctx      context.Context // bounds the write (OpTimeout, the stop)
	split    coordination.SplitID
	epoch    uint64
	progress coordination.SplitProgress
	reply    chan commitResult
}

// commitResult is a commit's outcome: err is Commit's result; landed says
// the write is durable.
type commitResult struct {
	err    error
	landed bool
}

// commitDesk is the commit writer as the routing reaches it.
type commitDesk interface {
	// Post queues msg on the shard of the split it concerns, behind what
	// was posted there before.
	Post(msg any)
	// Ask hands req to its split's shard and waits for the result.
	Ask(req commitRequest) commitResult
}
