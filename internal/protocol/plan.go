package protocol

import (
	"github.com/spate-go/coordination"
)

// NewPlan returns the plan record the first joiner creates: generation 0,
// open, planned 0, cursor null.
func NewPlan(fingerprint string, nowMs int64) PlanRecord {
	return PlanRecord{Fingerprint: fingerprint, Finality: coordination.PlanOpen, UpdatedAtMs: nowMs}
}
