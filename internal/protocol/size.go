package protocol

import (
	"math"

	"github.com/spate-go/coordination"
)

// This file holds the size checks of docs/protocol.md "Size limits": before writing a plan, spec,
// progress or assignment value, its encoded size n is compared with the
// store's value cap. A cap of 0 (or less) means no cap. Over the cap is
// Fatal, never Retryable.

// CheckSpecSize returns a Fatal *coordination.Error when split id's encoded
// spec record of n bytes is above cap, else nil.
func CheckSpecSize(id coordination.SplitID, n, cap int) error {
	if !overCap(n, cap) {
		return nil
	}
	return coordination.Errorf(coordination.Fatal,
		"split %s: spec record is %d bytes, above the store's value cap of %d bytes; shrink the descriptor",
		id, n, cap)
}

// CheckProgressSize returns a Fatal *coordination.Error when split id's
// encoded progress record of n bytes is above cap, else nil.
func CheckProgressSize(id coordination.SplitID, n, cap int) error {
	if !overCap(n, cap) {
		return nil
	}
	return coordination.Errorf(coordination.Fatal,
		"split %s: progress record is %d bytes, above the store's value cap of %d bytes; keep resume state smaller",
		id, n, cap)
}

// CheckPlanSize returns a Fatal *coordination.Error when the plan record r
// could exceed cap once published, else nil. It measures r with its
// counters at their widest (generation and planned at 2^64 − 1, the
// timestamp at its most negative), so a record that passes stays under the
// cap whatever a later publish counts.
func CheckPlanSize(r PlanRecord, cap int) error {
	r.Generation, r.Planned, r.UpdatedAtMs = math.MaxUint64, math.MaxUint64, math.MinInt64
	n := len(EncodePlan(r))
	if !overCap(n, cap) {
		return nil
	}
	return coordination.Errorf(coordination.Fatal,
		"plan record is up to %d bytes (fingerprint %d bytes, planner state %d bytes), above the store's value cap of %d bytes; keep the planner state and the fingerprint smaller",
		n, len(r.Fingerprint), len(r.PlannerState), cap)
}

// CheckAssignmentSize returns a Fatal *coordination.Error when the encoded
// assignment of n bytes for instance is above cap, else nil.
func CheckAssignmentSize(instance string, n, cap int) error {
	if !overCap(n, cap) {
		return nil
	}
	return coordination.Errorf(coordination.Fatal,
		"assignment for instance %s is %d bytes, above the store's value cap of %d bytes; use shorter split ids or a lower MaxInFlight",
		instance, n, cap)
}

// AssignmentCapacity returns the most splits whose ids are at most idLen
// bytes that one assignment record can name under cap (docs/protocol.md,
// "Size limits"): the leader clamps every member's lane budget to it, so no
// budget a peer advertises can make an assignment outgrow the cap. It is at
// least 1 (a cap too small for one id is left to [CheckAssignmentSize]);
// cap <= 0 means no cap (math.MaxInt).
func AssignmentCapacity(cap, idLen int) int {
	if cap <= 0 {
		return math.MaxInt
	}
	// n ids of idLen bytes take n*(idLen+2) bytes of quoted strings plus
	// n-1 commas inside the empty record's "[]".
	empty := len(EncodeAssignment(AssignmentRecord{Generation: math.MaxUint64}))
	return max(1, (cap-empty+1)/(max(idLen, 1)+3))
}

func overCap(n, cap int) bool { return cap > 0 && n > cap }
