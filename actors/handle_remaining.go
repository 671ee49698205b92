package actors

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
)

// ReportRemaining records the estimate of a held split's remaining work at
// the tenancy of epoch, in the split's weight units; 0 means nothing left or
// unknown and removes the split's estimate (docs/protocol.md, "Runtime
// split"). It never blocks and writes nothing by itself: the worker's next
// presence renewal, the write each heartbeat makes anyway, carries its few
// largest estimates of at least Config.MinCutWeight (none when CutInterval
// is negative), where the leader reads them to decide cuts. An estimate of
// a split not held at epoch is ignored, and a tenancy's estimate is dropped
// when it ends. Calls before Start, after Depart, Abort or a failure do
// nothing.
func (c *Coordinator) ReportRemaining(split coordination.SplitID, epoch coordination.LeaseEpoch, remaining uint64) {
	if epoch == 0 || c.gate() != nil {
		return
	}
	m := worker.RemainingReported{Split: split, Epoch: uint64(epoch), Remaining: remaining}
	c.v.Send(c.v.PIDs.SplitWriter, m) // the registry's owner passes a held tenancy's on to the lease
}
