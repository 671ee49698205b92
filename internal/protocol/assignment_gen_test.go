package protocol

import (
	"flag"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
)

// minAssignChecks is the number of rapid checks every assignment invariant
// gets in CI (issue #3).
const minAssignChecks = 1000

// checkAssignAtLeast runs prop until at least minAssignChecks checks ran: rapid's
// default is 100 per Check (-rapid.checks), so it runs Check enough times.
func checkAssignAtLeast(t *testing.T, prop func(*rapid.T)) {
	t.Helper()
	per := 100
	if f := flag.Lookup("rapid.checks"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 0 {
			per = n
		}
	}
	if testing.Short() {
		per = max(1, per/5)
	}
	for i := 0; i*per < minAssignChecks; i++ {
		rapid.Check(t, prop)
		if t.Failed() {
			return
		}
	}
}

// asgWeightGen draws spec weights: mostly small, sometimes the extremes of
// uint64 (0, 5e9, around 2^63, MaxUint64) or any value.
func asgWeightGen(extreme bool) *rapid.Generator[uint64] {
	if !extreme {
		return rapid.Uint64Range(0, 12)
	}
	return rapid.OneOf(
		rapid.Uint64Range(0, 12),
		rapid.SampledFrom([]uint64{0, 1, 5e9, math.MaxUint64 / 2, math.MaxUint64/2 + 1, math.MaxUint64 - 1, math.MaxUint64}),
		rapid.Uint64Range(math.MaxUint64-16, math.MaxUint64),
		rapid.Uint64(),
	)
}

// assignInputGen draws a small assignment input: up to 6 members (with
// repeats in the list), caps 1..n or defaulted, up to 24 splits in every
// status, with and without spec, owned by members, by departed instances or
// by nobody, some reserved, now and then one id repeated. With extreme, weights span 1..MaxUint64. With fit,
// weights are scaled down (divided by the split count) whenever their total
// would exceed MaxUint64, so no load asgSaturates.
func assignInputGen(extreme, fit bool) *rapid.Generator[AssignInput] {
	return rapid.Custom(func(t *rapid.T) AssignInput {
		// rapid favours small draws; offsets keep most inputs big enough to
		// exercise the improve pass.
		nm := 6 - rapid.IntRange(0, 5).Draw(t, "members")
		if rapid.IntRange(0, 19).Draw(t, "noMembers") == 0 {
			nm = 0
		}
		var in AssignInput
		in.FP = rapid.Uint64().Draw(t, "fp")
		pool := []string{"w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"}
		in.Members = slices.Clone(rapid.Permutation(pool).Draw(t, "perm")[:nm])
		if nm > 0 && rapid.IntRange(0, 4).Draw(t, "repeat") == 0 {
			in.Members = append(in.Members, in.Members[0])
		}
		ns := rapid.IntRange(0, 8).Draw(t, "fewSplits") + rapid.IntRange(0, 16).Draw(t, "moreSplits")
		in.DefaultCap = rapid.SampledFrom([]int{64, ns, ns/2 + 1, 3, 2, 1, 0, -1}).Draw(t, "defaultCap")
		in.Caps = map[string]int{}
		for _, m := range in.Members {
			if rapid.Bool().Draw(t, "hasCap") {
				in.Caps[m] = ns + 1 - rapid.IntRange(0, ns+2).Draw(t, "cap")
			}
		}
		owners := append([]string{"", "", "gone1", "gone2"}, pool...)
		// A skewed fleet (most splits on one instance, as after a join or a
		// restart) gives the improve pass work to do.
		hog := rapid.SampledFrom(append([]string{""}, pool...)).Draw(t, "hog")
		w := asgWeightGen(extreme)
		for i := range ns {
			owner := rapid.SampledFrom(owners).Draw(t, "owner")
			if hog != "" && rapid.IntRange(0, 3).Draw(t, "notHog") < 3 {
				owner = hog
			}
			s := AssignSplit{
				ID:      coordination.SplitID(fmt.Sprintf("s%02d", i)),
				Weight:  w.Draw(t, "weight"),
				HasSpec: rapid.IntRange(0, 9).Draw(t, "spec") > 0,
				Status:  Status(rapid.SampledFrom([]int{0, 0, 0, 0, 1, 2}).Draw(t, "status")),
				Owner:   owner,
			}
			in.Splits = append(in.Splits, s)
			if rapid.IntRange(0, 7).Draw(t, "reserve") == 0 {
				if in.Reserved == nil {
					in.Reserved = map[coordination.SplitID]bool{}
				}
				in.Reserved[s.ID] = true
			}
		}
		if ns > 0 && rapid.IntRange(0, 7).Draw(t, "duplicate") == 0 {
			// A caller bug Assign must still survive deterministically.
			d := in.Splits[rapid.IntRange(0, ns-1).Draw(t, "dupOf")]
			d.Weight = w.Draw(t, "dupWeight")
			d.Owner = rapid.SampledFrom(owners).Draw(t, "dupOwner")
			in.Splits = append(in.Splits, d)
		}
		if fit && asgSaturates(in.Splits) {
			for i := range in.Splits {
				in.Splits[i].Weight /= uint64(len(in.Splits))
			}
		}
		return in
	})
}

// asgSaturates reports whether the weights of splits (0 read as 1) sum past
// MaxUint64.
func asgSaturates(splits []AssignSplit) bool {
	var sum, carry uint64
	for _, s := range splits {
		sum, carry = bits.Add64(sum, max(1, s.Weight), 0)
		if carry != 0 {
			return true
		}
	}
	return false
}
