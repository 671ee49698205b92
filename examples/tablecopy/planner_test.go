package main

import (
	"encoding/json"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
)

// TestCutRangeCoversTheKeysExactly checks the cut: contiguous ranges of
// equal width (the last may be narrower), at most n of them, none empty,
// covering [min, max+1) exactly.
func TestCutRangeCoversTheKeysExactly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lo := rapid.Int64Range(-1<<40, 1<<40).Draw(t, "min")
		keys := keyRange{min: lo, max: lo + rapid.Int64Range(0, 1<<30).Draw(t, "span")}
		n := rapid.IntRange(1, 500).Draw(t, "n")
		rs := cutRange("items", keys, n)
		if len(rs) == 0 || len(rs) > n {
			t.Fatalf("%d ranges for n=%d", len(rs), n)
		}
		width := rs[0].Hi - rs[0].Lo
		next := keys.min
		for i, r := range rs {
			if r.Lo != next || r.Hi <= r.Lo || r.Table != "items" {
				t.Fatalf("range %d is %s after %d", i, r, next)
			}
			if i < len(rs)-1 && r.Hi-r.Lo != width {
				t.Fatalf("range %d is %s, width %d, want %d", i, r, r.Hi-r.Lo, width)
			}
			next = r.Hi
		}
		if next != keys.max+1 {
			t.Fatalf("ranges end at %d, want %d", next, keys.max+1)
		}
	})
}

func TestCutRangeOfAnEmptyTableIsOneEmptyRange(t *testing.T) {
	rs := cutRange("items", keyRange{empty: true}, 8)
	if len(rs) != 1 || rs[0].Lo != rs[0].Hi {
		t.Fatalf("cutRange(empty) = %v, want one empty range", rs)
	}
}

// TestPlanWeightsSplitsByTheirRows plans a generated table and checks that
// every split's weight is the row count of its range, that the weights add
// up to the table, and that the skewed ids make them uneven.
func TestPlanWeightsSplitsByTheirRows(t *testing.T) {
	const rows = 20_000
	db, tb := generatedTable(t, rows)
	keys, err := readKeyRange(t.Context(), db, tb)
	if err != nil {
		t.Fatal(err)
	}
	p := planner{db: db, table: tb, keys: keys, splits: 64}
	plan, err := p.Plan(t.Context(), coordination.PlanContext{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Finality != coordination.PlanFinal || len(plan.Splits) != 64 {
		t.Fatalf("plan has %d splits, finality %v; want 64, final", len(plan.Splits), plan.Finality)
	}
	pg := newPager(db, tb, 1)
	var sum uint64
	minW, maxW := uint64(rows), uint64(0)
	for _, s := range plan.Splits {
		r, err := decodeRange(s.Spec.ID, s.Spec.Descriptor, tb.name)
		if err != nil {
			t.Fatal(err)
		}
		n, err := pg.count(t.Context(), r.Lo, r.Hi)
		if err != nil {
			t.Fatal(err)
		}
		if s.Spec.Weight != uint64(max(1, n)) {
			t.Fatalf("split %s %s: weight %d, holds %d rows", s.Spec.ID, r, s.Spec.Weight, n)
		}
		sum += uint64(n)
		minW, maxW = min(minW, s.Spec.Weight), max(maxW, s.Spec.Weight)
	}
	if sum != rows {
		t.Fatalf("splits hold %d rows, the table %d", sum, rows)
	}
	if maxW < 10*minW {
		t.Fatalf("weights %d..%d: the ids are not skewed enough to show weighting", minW, maxW)
	}
	if got, want := p.Fingerprint(), (planner{table: tb, keys: keys, splits: 64}).Fingerprint(); got != want || !strings.Contains(got, "items") {
		t.Fatalf("fingerprint %q, want %q naming the table", got, want)
	}
}

func TestDecodeRangeRejectsForeignDescriptors(t *testing.T) {
	enc := func(r idRange) []byte {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name string
		desc []byte
		want string
	}{
		{name: "not json", desc: []byte("rows 1-5"), want: "descriptor is not an id range"},
		{name: "other table", desc: enc(idRange{Table: "orders", Lo: 1, Hi: 5}), want: `descriptor names table "orders", this worker copies "items"`},
		{name: "inverted", desc: enc(idRange{Table: "items", Lo: 5, Hi: 1}), want: "[5, 1) is inverted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeRange("ids-1", tt.desc, "items")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "split ids-1") {
				t.Fatalf("decodeRange = %v, want an error naming the split and %q", err, tt.want)
			}
		})
	}
	r, err := decodeRange("ids-1", enc(idRange{Table: "items", Lo: 3, Hi: 9}), "items")
	if err != nil || r.Lo != 3 || r.Hi != 9 {
		t.Fatalf("decodeRange = %v, %v; want [3, 9)", r, err)
	}
}

func TestSplitIDsSortInKeyOrder(t *testing.T) {
	if a, b := splitID(9, 64), splitID(10, 64); a != "ids-09" || b != "ids-10" {
		t.Fatalf("splitID = %s, %s; want ids-09, ids-10", a, b)
	}
}
