package assign

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
)

// TestDiffAssigned checks the assignment's diff against set arithmetic:
// added is next minus old, removed is old minus next, and together with
// what both name they account for every split of either, each once.
func TestDiffAssigned(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.SampledFrom([]coordination.SplitID{"a", "b", "c", "d", "e", "f"})
		old := map[coordination.SplitID]bool{}
		for _, s := range rapid.SliceOfDistinct(id, func(s coordination.SplitID) coordination.SplitID { return s }).Draw(t, "old") {
			old[s] = true
		}
		next := rapid.SliceOfDistinct(id, func(s coordination.SplitID) coordination.SplitID { return s }).Draw(t, "next")
		set, added, removed := diffAssigned(old, next)
		if len(set) != len(next) {
			t.Fatalf("set %v, want the %d splits of %v", set, len(next), next)
		}
		for _, s := range next {
			if !set[s] {
				t.Fatalf("set %v lacks %s", set, s)
			}
			if slices.Contains(added, s) == old[s] {
				t.Fatalf("%s: in added %v, in old %v", s, added, old[s])
			}
		}
		for s := range old {
			if slices.Contains(removed, s) == set[s] {
				t.Fatalf("%s: in removed %v, in next %v", s, removed, set[s])
			}
		}
		for _, s := range removed {
			if !old[s] {
				t.Fatalf("removed %v names %s, which old did not", removed, s)
			}
		}
		if !slices.IsSorted(removed) {
			t.Fatalf("removed %v is not sorted", removed)
		}
	})
}
