package lease

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
)

// estimates are the remaining-work estimates of this worker's held
// tenancies (Coordinator.ReportRemaining) that the next presence renewal
// carries (docs/protocol.md, "Runtime split", "Records and fields it
// adds"): no write of their own, they ride on the heartbeat's. Written by
// the lease actor only. Which tenancies are held is the split writer's: it
// passes on only a held tenancy's estimate, and a 0 for each tenancy that
// ends, so the lease keeps no copy of the registry.
type estimates struct {
	est map[coordination.SplitID]protocol.Estimate
}

func newEstimates() estimates {
	return estimates{est: map[coordination.SplitID]protocol.Estimate{}}
}

// report records m's estimate; 0 removes the split's estimate.
func (e *estimates) report(m worker.RemainingReported) {
	if m.Remaining == 0 {
		delete(e.est, m.Split)
		return
	}
	e.est[m.Split] = protocol.Estimate{Split: m.Split, Epoch: m.Epoch, Remaining: m.Remaining}
}

// largest returns what the presence value carries: at most
// protocol.EstimatesMax estimates (all of held tenancies: report and
// tenancy keep no other), each at least
// minWeight, the largest first; nil when none is, or when cutting is false
// (cuts are off: the leader never asks, so nothing is worth carrying).
func (e *estimates) largest(minWeight uint64, cutting bool) []protocol.Estimate {
	if !cutting || len(e.est) == 0 {
		return nil
	}
	es := make([]protocol.Estimate, 0, len(e.est))
	for _, x := range e.est {
		if x.Remaining >= max(minWeight, 1) {
			es = append(es, x)
		}
	}
	return protocol.LargestEstimates(es)
}
