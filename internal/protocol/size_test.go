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
