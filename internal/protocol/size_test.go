package protocol

import (
	"testing"
)

func TestSizeChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string // "" for nil
	}{
		{"spec under", CheckSpecSize("s0", 10, 11), ""},
		{"spec at cap", CheckSpecSize("s0", 11, 11), ""},
		{"spec no cap", CheckSpecSize("s0", 1<<30, 0), ""},
		{"spec over", CheckSpecSize("s0", 12, 11),
			"split s0: spec record is 12 bytes, above the store's value cap of 11 bytes; shrink the descriptor"},
		{"progress at cap", CheckProgressSize("s0", 11, 11), ""},
		{"progress no cap", CheckProgressSize("s0", 1<<30, 0), ""},
		{"progress over", CheckProgressSize("s-1", 2000, 1024),
			"split s-1: progress record is 2000 bytes, above the store's value cap of 1024 bytes; keep resume state smaller"},
		{"assignment at cap", CheckAssignmentSize("w1", 11, 11), ""},
		{"assignment no cap", CheckAssignmentSize("w1", 1<<30, 0), ""},
		{"assignment over", CheckAssignmentSize("w1", 1048577, 1048576),
			"assignment for instance w1 is 1048577 bytes, above the store's value cap of 1048576 bytes; use shorter split ids or a lower MaxInFlight"},
		{"plan under", CheckPlanSize(PlanRecord{Fingerprint: "f"}, 1024), ""},
		{"plan no cap", CheckPlanSize(PlanRecord{Fingerprint: "f", PlannerState: make([]byte, 1<<20)}, 0), ""},
		{"plan over by its state", CheckPlanSize(PlanRecord{Fingerprint: "job:v1", PlannerState: make([]byte, 5<<10)}, 2<<10),
			"plan record is up to 7002 bytes (fingerprint 6 bytes, planner state 5120 bytes), above the store's value cap of 2048 bytes; keep the planner state and the fingerprint smaller"},
		// The widest counters are counted: a record that fits at planned 0
		// but not at planned 2^64-1 is refused before it is first written.
		{"plan over only at its widest", CheckPlanSize(PlanRecord{Fingerprint: "f"}, len(EncodePlan(PlanRecord{Fingerprint: "f"}))),
			"plan record is up to 171 bytes (fingerprint 1 bytes, planner state 0 bytes), above the store's value cap of 114 bytes; keep the planner state and the fingerprint smaller"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				if tc.err != nil {
					t.Fatalf("unexpected error: %v", tc.err)
				}
				return
			}
			wantFatal(t, tc.err, tc.want)
		})
	}
}
