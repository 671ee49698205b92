package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// TestPeakOverlapProperty checks the sweep against counting the intervals
// open at every start instant (where a maximum is always reached).
func TestPeakOverlapProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := time.Unix(0, 0)
		n := rapid.IntRange(0, 30).Draw(t, "n")
		ivs := make([][2]time.Time, n)
		for i := range ivs {
			s := rapid.IntRange(0, 50).Draw(t, "start")
			l := rapid.IntRange(1, 20).Draw(t, "length")
			ivs[i] = [2]time.Time{base.Add(time.Duration(s)), base.Add(time.Duration(s + l))}
		}
		want := 0
		for _, at := range ivs {
			open := 0
			for _, iv := range ivs {
				if !at[0].Before(iv[0]) && at[0].Before(iv[1]) {
					open++
				}
			}
			want = max(want, open)
		}
		if got := peakOverlap(ivs); got != want {
			t.Fatalf("peakOverlap = %d, want %d", got, want)
		}
	})
}

// TestPercentile checks nearest-rank quantiles on a known set.
func TestPercentile(t *testing.T) {
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(100 - i) // reversed: percentile must sort
	}
	for _, tc := range []struct {
		name string
		q    float64
		want time.Duration
	}{{"p50", 0.50, 51}, {"p99", 0.99, 100}, {"p0", 0, 1}, {"p100", 1, 100}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(slices.Clone(ds), tc.q); got != tc.want {
				t.Fatalf("percentile(%v) = %d, want %d", tc.q, got, tc.want)
			}
		})
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Fatalf("percentile(nil) = %d, want 0", got)
	}
}

// TestRunRaw checks a raw baseline issues exactly the writes asked for,
// updates landing on keys it prepared.
func TestRunRaw(t *testing.T) {
	cs := newCounting(memstore.New(time.Minute))
	ws := []rawWrite{
		{store.Durable, opCreate, 10}, {store.Durable, opUpdate, 20},
		{store.Ephemeral, opCreate, 5}, {store.Ephemeral, opUpdate, 7}, {store.Durable, opUpdate, 1},
	}
	if _, err := runRaw(context.Background(), cs, "t", ws, 3); err != nil {
		t.Fatal(err)
	}
	got := cs.snapshot()
	// Two durable and one ephemeral preparing creates, then the writes.
	if got.calls[store.Durable][opCreate] != 3 || got.calls[store.Durable][opUpdate] != 2 ||
		got.calls[store.Ephemeral][opCreate] != 2 || got.calls[store.Ephemeral][opUpdate] != 1 {
		t.Fatalf("calls = %+v", got.calls)
	}
	if _, err := runRaw(context.Background(), cs, "t", ws[:1], 1); err == nil {
		t.Fatal("a raw create of an existing key did not fail")
	}
}

// TestIsPlanKey checks the plan record is recognised with or without a
// family prefix, and nothing else is.
func TestIsPlanKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"plan", true}, {"job.plan", true}, {"planner", false}, {"job.plans", false},
		{"job.split." + string(splitID(1)), false}, {"assign.plan-worker", false},
	} {
		t.Run(tc.key, func(t *testing.T) {
			if got := isPlanKey(tc.key); got != tc.want {
				t.Fatalf("isPlanKey(%q) = %v, want %v", tc.key, got, tc.want)
			}
		})
	}
}

// TestIsSplitKey checks split keys are recognised under any family.
func TestIsSplitKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"split." + string(splitID(7)), true},
		{"job.split." + string(splitID(7)), true},
		{"progress." + string(splitID(7)), true},
		{"spec." + string(splitID(7)), true},
		{"some.new.family." + string(splitID(0)), true},
		{string(splitID(3)), true},
		{"plan", false},
		{"worker.w0", false},
		{"assign.sp-worker", false},
		{"leader", false},
	} {
		t.Run(tc.key, func(t *testing.T) {
			if got := isSplitKey(tc.key); got != tc.want {
				t.Fatalf("isSplitKey(%q) = %v, want %v", tc.key, got, tc.want)
			}
		})
	}
}
