package worker

import (
	"maps"
	"math"
	"testing"

	"pgregory.net/rapid"
)

func TestSizeHintIsBounded(t *testing.T) {
	for _, tc := range []struct {
		planned uint64
		want    int
	}{{0, 0}, {100_000, 100_000}, {maxSizeHint, maxSizeHint}, {maxSizeHint + 1, maxSizeHint}, {math.MaxUint64, maxSizeHint}} {
		if got := SizeHint(tc.planned); got != tc.want {
			t.Errorf("SizeHint(%d) = %d, want %d", tc.planned, got, tc.want)
		}
	}
}

// TestSizedKeepsEveryEntry checks that sizing a map never changes what it
// holds, and that a map already as large as the hint is kept as it is.
func TestSizedKeepsEveryEntry(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.MapOf(rapid.String(), rapid.Int()).Draw(t, "m")
		hint := rapid.IntRange(0, 64).Draw(t, "hint")
		before := maps.Clone(m)
		got := Sized(m, hint)
		if !maps.Equal(got, before) {
			t.Fatalf("Sized(%v, %d) = %v", before, hint, got)
		}
		if len(m) >= hint {
			got["probe"] = 1 // the same map: the write shows in m
			if _, ok := m["probe"]; !ok {
				t.Fatalf("Sized copied a map of %d entries for hint %d", len(before), hint)
			}
		}
	})
}
