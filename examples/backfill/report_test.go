package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
)

// twoSplits is a data set of records 0..99 in splits [0, 60) and [60, 100).
func twoSplits() *dataset {
	return &dataset{records: 100, splits: []dataSplit{
		{ID: "s0", Range: recordRange{0, 60}},
		{ID: "s1", Range: recordRange{60, 100}},
	}}
}

func TestTallyCountsDuplicatesAndGaps(t *testing.T) {
	got := tallyOf(twoSplits(), []delivery{
		{Split: "s0", Worker: "a", Start: 0, End: 40},
		{Split: "s0", Worker: "b", Start: 30, End: 50}, // 10 replayed
		{Split: "s1", Worker: "b", Start: 70, End: 100},
		{Split: "s1", Worker: "a", Start: 80, End: 80}, // empty: a tenancy that read nothing
	})
	if got.delivered != 80 || got.deliveries != 90 || got.duplicates() != 10 || got.lost() != 20 {
		t.Fatalf("delivered %d, deliveries %d, duplicates %d, lost %d; want 80, 90, 10, 20",
			got.delivered, got.deliveries, got.duplicates(), got.lost())
	}
	if a, b := got.byWorker["a"], got.byWorker["b"]; a != 40 || b != 50 {
		t.Fatalf("per worker a %d, b %d; want 40, 50", a, b)
	}
	if want := []recordRange{{50, 60}, {60, 70}}; !slices.Equal(got.gaps, want) {
		t.Fatalf("gaps %v, want %v", got.gaps, want)
	}
}

// TestTallyMatchesARecordByRecordCount checks the interval arithmetic
// against a per-record count for any deliveries inside the splits.
func TestTallyMatchesARecordByRecordCount(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ds := newDataset(rapid.IntRange(1, 6).Draw(t, "splits"), int64(rapid.IntRange(0, 300).Draw(t, "records")))
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
			gap += r.Len()
		}
		if gap != got.lost() {
			t.Fatalf("gaps cover %d records, lost is %d", gap, got.lost())
		}
	})
}

func TestReportVerdict(t *testing.T) {
	complete := tally{planned: 100, delivered: 100, deliveries: 100}
	partial := tally{planned: 100, delivered: 97, deliveries: 97, gaps: []recordRange{{10, 13}}}
	tests := []struct {
		name        string
		t           tally
		state       int32
		errs        []error
		interrupted bool
		outcome     int
		want        []string
	}{
		{name: "complete, nothing lost", t: complete, state: stateCompleted, outcome: outcomeOK,
			want: []string{"lost:        0\n", "result:      OK, every planned record"}},
		{name: "complete, records lost", t: partial, state: stateCompleted, outcome: outcomeFailed,
			want: []string{"lost:        3\n", "missing:     10-13\n", "FAILED, the job did not complete: 3 records not delivered"}},
		{name: "worker failed", t: complete, state: stateFailed, errs: []error{coordination.ErrFatal}, outcome: outcomeFailed,
			want: []string{"error:       coordination error (fatal)", "FAILED, the job did not complete"}},
		{name: "interrupted", t: partial, state: stateInterrupted, interrupted: true, outcome: outcomeInterrupted,
			want: []string{"remaining:   3 records not delivered yet\n", "result:      interrupted; run again to resume"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &worker{name: "a", src: &source{}}
			w.state.Store(tt.state)
			r := newReport("a", twoSplits(), tt.t, []*worker{w}, newFleet(func(string) {}), 1500*time.Millisecond, tt.errs, tt.interrupted)
			if r.Outcome != tt.outcome {
				t.Fatalf("outcome %d, want %d", r.Outcome, tt.outcome)
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

func TestExitStatusPerOutcome(t *testing.T) {
	for outcome, want := range map[int]int{outcomeOK: 0, outcomeFailed: 1, outcomeInterrupted: 3} {
		if got := exitStatus(outcome); got != want {
			t.Errorf("exitStatus(%d) = %d, want %d", outcome, got, want)
		}
	}
}

func TestCountUsesTheRightNumber(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{count(1, "split"), "1 split"},
		{count(0, "split"), "0 splits"},
		{count(int64(2), "record"), "2 records"},
		{count(3, "delivery"), "3 deliveries"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
