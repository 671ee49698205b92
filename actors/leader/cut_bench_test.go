package leader

import (
	"fmt"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/internal/protocol"
)

// benchView is a leader's view of n runnable splits held by 100 live
// members, each reporting four estimates.
func benchView(n int) *fleetView {
	f := newFleetView(0)
	for m := range 100 {
		inst := fmt.Sprintf("w%d", m)
		f.join(inst, uint32(n/100+2), "n-"+inst)
	}
	for i := range n {
		inst := fmt.Sprintf("w%d", i%100)
		id := coordination.SplitID(fmt.Sprintf("split-%06d", i))
		f.records[id] = splitFacts{owner: inst, nonce: "n-" + inst, epoch: 1, weight: 1, seen: true, status: protocol.StatusRunnable}
		if i < 400 {
			f.estimates[inst] = append(f.estimates[inst], wire.Estimate{Split: id, Epoch: 1, Remaining: uint64(1000 + i)})
		}
	}
	return &f
}

// BenchmarkCutEvaluation is one heartbeat's evaluation of the cutter over
// 100k held splits (the cost a leader pays per CutInterval while a member
// reports estimates).
func BenchmarkCutEvaluation(b *testing.B) {
	f := benchView(100_000)
	cfg := coordination.DefaultConfig()
	t0 := time.Unix(0, 0)
	for b.Loop() {
		var c cutter
		c.lead(t0)
		c.evaluate(t0.Add(time.Hour), time.Second, f, cfg, 0)
	}
}

// BenchmarkAssignInput is the baseline: building the assignment function's
// input over the same view, which every publish does.
func BenchmarkAssignInput(b *testing.B) {
	f := benchView(100_000)
	cfg := coordination.DefaultConfig()
	for b.Loop() {
		f.assignInput(cfg, "job:v1", 0)
	}
}
