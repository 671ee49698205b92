package protocol

import (
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
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

// idsOfLen returns n distinct split ids of exactly l bytes (64^l > n).
func idsOfLen(n, l int) []coordination.SplitID {
	ids := make([]coordination.SplitID, n)
	for i := range ids {
		b := []byte(strings.Repeat("a", l))
		for j, v := l-1, i; v > 0; j, v = j-1, v/len(nameAlphabet) {
			b[j] = nameAlphabet[v%len(nameAlphabet)]
		}
		ids[i] = coordination.SplitID(b)
	}
	return ids
}

// An assignment of AssignmentCapacity ids of the longest length fits the
// cap, one more does not: the leader's clamp is exact.
func TestAssignmentCapacityIsExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := rapid.IntRange(4, 128).Draw(t, "idLen")
		c := rapid.IntRange(200, 1<<20).Draw(t, "cap")
		n := AssignmentCapacity(c, l)
		ids := idsOfLen(n+1, l)
		rec := AssignmentRecord{Generation: math.MaxUint64}
		rec.Splits = ids[:n]
		if got := len(EncodeAssignment(rec)); got > c {
			t.Fatalf("%d ids of %d bytes encode to %d bytes, above the cap %d", n, l, got, c)
		}
		rec.Splits = ids
		if got := len(EncodeAssignment(rec)); got <= c {
			t.Fatalf("%d ids of %d bytes encode to %d bytes, within the cap %d: the capacity %d is not the most", n+1, l, got, c, n)
		}
	})
	if n := AssignmentCapacity(512<<10, 128); n != 4001 {
		t.Fatalf("NATS's 512 KiB cap carries %d ids of 128 bytes, docs say 4001", n)
	}
	if n := AssignmentCapacity(0, 128); n != math.MaxInt {
		t.Fatalf("no cap: capacity %d, want unlimited", n)
	}
}
