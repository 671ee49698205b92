package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/lanes"
)

// TestDatasetCoversEveryRecordOnce checks, for any flags, that the splits
// cover every record exactly once, in order, under valid distinct ids that
// lanes.Planner takes.
func TestDatasetCoversEveryRecordOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 2000).Draw(t, "splits")
		records := rapid.Int64Range(1, 3_000_000).Draw(t, "records")
		ds := newDataset(n, records, rapid.Bool().Draw(t, "misestimate"))
		if len(ds.splits) == 0 || len(ds.splits) > n {
			t.Fatalf("%d splits, want 1..%d", len(ds.splits), n)
		}
		var next int64
		for i, s := range ds.splits {
			if s.Range.Start != next || s.Range.End <= s.Range.Start {
				t.Fatalf("split %d range %v does not continue at %d", i, s.Range, next)
			}
			next = s.Range.End
			if i > 0 && ds.splits[i-1].ID >= s.ID {
				t.Fatalf("split ids not increasing: %s before %s", ds.splits[i-1].ID, s.ID)
			}
		}
		if next != records {
			t.Fatalf("splits cover %d records, want %d", next, records)
		}
		if _, err := lanes.Planner(ds.splits); err != nil {
			t.Fatal(err)
		}
		if got := ds.holder(records - 1); got != &ds.splits[len(ds.splits)-1] {
			t.Fatalf("the last record's holder is %s", got.ID)
		}
	})
}

func TestDatasetIsUnevenAndDeterministic(t *testing.T) {
	a, b := newDataset(64, 1_000_000, false), newDataset(64, 1_000_000, false)
	if len(a.splits) != 64 {
		t.Fatalf("%d splits, want 64", len(a.splits))
	}
	smallest, largest := int64(1<<62), int64(0)
	for i, s := range a.splits {
		if s.ID != b.splits[i].ID || s.Range != b.splits[i].Range || s.Weight != b.splits[i].Weight {
			t.Fatalf("split %d differs between two builds: %v vs %v", i, s, b.splits[i])
		}
		n := s.Range.End - s.Range.Start
		if s.Weight != uint64(n) {
			t.Fatalf("split %s weighs %d, holds %d records", s.ID, s.Weight, n)
		}
		smallest, largest = min(smallest, n), max(largest, n)
	}
	if largest < 3*smallest {
		t.Fatalf("sizes too even: smallest %d, largest %d", smallest, largest)
	}
	if a.planner().Fingerprint() != b.planner().Fingerprint() || jobName(a.planner()) == jobName(newDataset(64, 1_000_000, true).planner()) {
		t.Fatal("the same flags name two jobs, or -misestimate names the same job")
	}
}

// TestMisestimateWeighsEverySplitTheSame checks -misestimate's plan: one
// split holds a quarter of the records, yet every split weighs the same.
func TestMisestimateWeighsEverySplitTheSame(t *testing.T) {
	ds := newDataset(64, 2_000_000, true)
	big := ds.holder(1_000_000)
	if n := big.Range.End - big.Range.Start; n < 499_000 || n > 501_000 {
		t.Fatalf("the middle split holds %d records, want a quarter of 2,000,000", n)
	}
	for _, s := range ds.splits {
		if s.Weight != 2_000_000/64 {
			t.Fatalf("split %s weighs %d, want %d", s.ID, s.Weight, 2_000_000/64)
		}
	}
}

// twoSplits is a data set of records 0..99 in splits s0 [0, 60) and s1
// [60, 100).
func twoSplits() *dataset {
	return &dataset{records: 100, splits: []lanes.Split[int64]{
		{ID: "s0", Range: lanes.Range[int64]{Start: 0, End: 60}},
		{ID: "s1", Range: lanes.Range[int64]{Start: 60, End: 100}},
	}}
}

func TestTallyCountsDuplicatesGapsAndResiduals(t *testing.T) {
	got := tallyOf(twoSplits(), []delivery{
		{Split: "s0", Worker: "a", Start: 0, End: 40},
		{Split: "s0", Worker: "b", Start: 30, End: 50}, // 10 replayed
		{Split: "_s1_1_1", Worker: "b", Start: 70, End: 100},
		{Split: "s1", Worker: "a", Start: 80, End: 80}, // empty: a tenancy that read nothing
	})
	if got.delivered != 80 || got.deliveries != 90 || got.duplicates() != 10 || got.lost() != 20 || len(got.residuals) != 1 {
		t.Fatalf("delivered %d, deliveries %d, duplicates %d, lost %d, residuals %d; want 80, 90, 10, 20, 1",
			got.delivered, got.deliveries, got.duplicates(), got.lost(), len(got.residuals))
	}
	if a, b := got.byWorker["a"], got.byWorker["b"]; a != 40 || b != 50 {
		t.Fatalf("per worker a %d, b %d; want 40, 50", a, b)
	}
	if want := []lanes.Range[int64]{{Start: 50, End: 60}, {Start: 60, End: 70}}; !slices.Equal(got.gaps, want) {
		t.Fatalf("gaps %v, want %v", got.gaps, want)
	}
}

// TestTallyMatchesARecordByRecordCount checks the interval arithmetic
// against a per-record count for any deliveries inside the splits.
func TestTallyMatchesARecordByRecordCount(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ds := newDataset(rapid.IntRange(1, 6).Draw(t, "splits"), rapid.Int64Range(1, 300).Draw(t, "records"), false)
		var entries []delivery
		counts := make([]int, ds.records)
		for range rapid.IntRange(0, 12).Draw(t, "deliveries") {
			s := ds.splits[rapid.IntRange(0, len(ds.splits)-1).Draw(t, "split")]
			start := rapid.Int64Range(s.Range.Start, s.Range.End).Draw(t, "start")
			end := rapid.Int64Range(start, s.Range.End).Draw(t, "end")
			entries = append(entries, delivery{Split: s.ID, Worker: "w", Start: start, End: end})
			for i := start; i < end; i++ {
				counts[i]++
			}
		}
		got := tallyOf(ds, entries)
		var delivered, deliveries int64
		for _, c := range counts {
			if c > 0 {
				delivered++
			}
			deliveries += int64(c)
		}
		if got.delivered != delivered || got.deliveries != deliveries {
			t.Fatalf("tally delivered %d of %d deliveries, counted %d of %d", got.delivered, got.deliveries, delivered, deliveries)
		}
		var gap int64
		for _, r := range got.gaps {
			for i := r.Start; i < r.End; i++ {
				if counts[i] != 0 {
					t.Fatalf("gap %v holds delivered record %d", r, i)
				}
			}
			gap += r.End - r.Start
		}
		if gap != got.lost() {
			t.Fatalf("gaps cover %d records, lost is %d", gap, got.lost())
		}
	})
}

func TestReportVerdict(t *testing.T) {
	complete := tally{planned: 100, delivered: 100, deliveries: 100}
	partial := tally{planned: 100, delivered: 97, deliveries: 97, gaps: []lanes.Range[int64]{{Start: 10, End: 13}}}
	tests := []struct {
		name        string
		t           tally
		state       int32
		errs        []error
		interrupted bool
		outcome     int
		status      int
		want        []string
	}{
		{name: "complete, nothing lost", t: complete, state: stateCompleted, outcome: outcomeOK, status: 0,
			want: []string{"lost:            0\n", "result:          OK, every planned record"}},
		{name: "complete, records lost", t: partial, state: stateCompleted, outcome: outcomeFailed, status: 1,
			want: []string{"lost:            3\n", "missing:         10-13\n", "FAILED, the job did not complete"}},
		{name: "worker failed", t: complete, state: stateFailed, errs: []error{coordination.ErrFatal}, outcome: outcomeFailed, status: 1,
			want: []string{"error:           coordination error (fatal)", "FAILED, the job did not complete"}},
		{name: "interrupted", t: partial, state: stateInterrupted, interrupted: true, outcome: outcomeInterrupted, status: 3,
			want: []string{"remaining:       3 records not delivered yet\n", "result:          interrupted; run again to resume"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &worker{name: "a"}
			w.state.Store(tt.state)
			r := newReport("a", twoSplits(), tt.t, []*worker{w}, newFleet(func(string) {}), 1500*time.Millisecond, tt.errs, tt.interrupted)
			if r.Outcome != tt.outcome || r.exitStatus() != tt.status {
				t.Fatalf("outcome %d, exit status %d; want %d, %d", r.Outcome, r.exitStatus(), tt.outcome, tt.status)
			}
			var buf bytes.Buffer
			r.write(&buf)
			for _, want := range tt.want {
				if !strings.Contains(buf.String(), want) {
					t.Fatalf("report lacks %q:\n%s", want, buf.String())
				}
			}
			if tt.interrupted && strings.Contains(buf.String(), "lost:") {
				t.Fatalf("an interrupted run reports its remaining records as lost:\n%s", buf.String())
			}
		})
	}
}
