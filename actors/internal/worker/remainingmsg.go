package worker

import "github.com/spate-go/coordination"

// RemainingReported is the handle's ReportRemaining: the owner's estimate of
// a held split's remaining work at the tenancy of Epoch, in the split's
// weight units (0: nothing left, or unknown). The lease actor keeps the
// estimates of the tenancies it sees held and puts the few largest in its
// next presence renewal (docs/protocol.md, "Runtime split").
type RemainingReported struct {
	Split     coordination.SplitID
	Epoch     uint64
	Remaining uint64
}
