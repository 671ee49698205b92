package worker

import "github.com/spate-go/coordination"

// CutAsked is one cut request of the leader addressed to this worker, as
// its assignment record carries it (docs/protocol.md, "Runtime split",
// "Who decides"). The split writer posts it to the commit writer
// (Env.Commits), which knows the tenancy's durable record: it acts on the
// request only while it holds Split at Epoch with no cut in flight, its
// next cut of the tenancy is numbered Counter, and at most once per half
// cut interval per tenancy, by emitting coordination.CutRequested.
type CutAsked struct {
	Split   coordination.SplitID
	Epoch   coordination.LeaseEpoch
	Counter uint64
	KeepPPM uint32 // the primary's share of what remains, in millionths
	Parts   uint32 // residuals to cut off, the rest divided equally among them; at least 1
}
