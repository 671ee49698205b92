package sqlscan

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// Integer splits from any histogram cover [min, max+1) without gaps or
// overlaps, in order, and their weights add up to the row estimate (each
// at least 1); a histogram bucket's rows go to the splits it spans, none to
// the edges beyond the histogram's extremes.
func TestIntSplitsCoverAndWeigh(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lo := rapid.Int64Range(-1e6, 1e6).Draw(t, "min")
		hi := lo + rapid.Int64Range(0, 1e6).Draw(t, "span")
		raw := rapid.SliceOfN(rapid.Int64Range(lo-10, hi+10), 0, 30).Draw(t, "bounds")
		slices.Sort(raw)
		e := estimate{min: lo, max: hi, rows: float64(rapid.IntRange(1, 1e7).Draw(t, "rows")), bounds: []any{}}
		for _, b := range raw {
			e.bounds = append(e.bounds, b)
		}
		n := rapid.IntRange(1, 50).Draw(t, "n")
		splits := e.intSplits("s", n)
		if len(splits) == 0 || len(splits) > n {
			t.Fatalf("%d splits for n=%d", len(splits), n)
		}
		at := lo
		var sum float64
		for _, s := range splits {
			if s.Range.Start != at || s.Range.End <= s.Range.Start || s.Weight < 1 {
				t.Fatalf("split %s [%d, %d) weight %d after %d", s.ID, s.Range.Start, s.Range.End, s.Weight, at)
			}
			at = s.Range.End
			sum += float64(s.Weight)
		}
		if at != hi+1 {
			t.Fatalf("splits end at %d, want max+1 = %d", at, hi+1)
		}
		if math.Abs(sum-e.rows) > float64(len(splits))+1 && sum > float64(len(splits)) {
			t.Fatalf("weights add up to %.0f, want about %.0f", sum, e.rows)
		}
	})
}

// With a histogram whose extremes are well inside [min, max], the edge
// buckets weigh nothing: the rows are the histogram buckets', and the
// boundaries interpolate within them.
func TestIntSplitsEdgesWeighNothing(t *testing.T) {
	e := estimate{min: 0, max: 999, rows: 900, bounds: []any{int64(100), int64(200), int64(900)}}
	splits := e.intSplits("s", 3)
	// Buckets [100, 200) and [200, 900) hold 450 rows each.
	want := []struct{ start, end int64 }{{0, 167}, {167, 433}, {433, 1000}}
	if len(splits) != len(want) {
		t.Fatalf("splits %+v; want %v", splits, want)
	}
	for i, s := range splits {
		if s.Range.Start != want[i].start || s.Range.End != want[i].end || s.Weight != 300 {
			t.Fatalf("split %d is [%d, %d) weight %d; want [%d, %d) weight 300 (all: %+v)", i, s.Range.Start, s.Range.End, s.Weight, want[i].start, want[i].end, splits)
		}
	}
}
