package main

import (
	"context"
	"strings"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store/natsstore"
)

func TestDatasetCoversEveryRecordOnce(t *testing.T) {
	tests := []struct {
		name    string
		splits  int
		records int64
	}{
		{name: "default", splits: 64, records: 1_000_000},
		{name: "ci", splits: 16, records: 50_000},
		{name: "one split", splits: 1, records: 10},
		{name: "fewer records than splits", splits: 30, records: 5},
		{name: "no records", splits: 8, records: 0},
		{name: "wide ids", splits: 1500, records: 20_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDataset(tt.splits, tt.records)
			if len(ds.splits) != tt.splits {
				t.Fatalf("got %d splits, want %d", len(ds.splits), tt.splits)
			}
			var next int64
			seen := map[coordination.SplitID]bool{}
			for i, s := range ds.splits {
				if s.Range.Start != next || s.Range.End < s.Range.Start {
					t.Fatalf("split %d range %s does not continue at %d", i, s.Range, next)
				}
				next = s.Range.End
				if _, err := coordination.NewSplitID(string(s.ID)); err != nil {
					t.Fatalf("split %d id: %v", i, err)
				}
				if seen[s.ID] {
					t.Fatalf("split id %s repeats", s.ID)
				}
				seen[s.ID] = true
				if i > 0 && ds.splits[i-1].ID >= s.ID {
					t.Fatalf("split ids not sorted: %s before %s", ds.splits[i-1].ID, s.ID)
				}
				if i%emptyEvery == emptyAt && s.Range.Len() != 0 {
					t.Fatalf("split %d should be empty, has %d records", i, s.Range.Len())
				}
			}
			if next != tt.records {
				t.Fatalf("splits cover %d records, want %d", next, tt.records)
			}
		})
	}
}

func TestDatasetIsUnevenAndDeterministic(t *testing.T) {
	a, b := newDataset(64, 1_000_000), newDataset(64, 1_000_000)
	var smallest, largest int64 = 1 << 62, 0
	empty := 0
	for i := range a.splits {
		if a.splits[i] != b.splits[i] {
			t.Fatalf("split %d differs between two builds: %v vs %v", i, a.splits[i], b.splits[i])
		}
		n := a.splits[i].Range.Len()
		if n == 0 {
			empty++
			continue
		}
		smallest, largest = min(smallest, n), max(largest, n)
	}
	if largest < 3*smallest {
		t.Fatalf("sizes too even: smallest %d, largest %d", smallest, largest)
	}
	if empty != 3 {
		t.Fatalf("got %d empty splits, want 3", empty)
	}
}

func TestPlannerPlansEverySplitFinal(t *testing.T) {
	ds := newDataset(16, 50_000)
	p := planner{ds: ds}
	plan, err := p.Plan(context.Background(), coordination.PlanContext{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Finality != coordination.PlanFinal {
		t.Fatalf("finality %v, want PlanFinal", plan.Finality)
	}
	if len(plan.Splits) != 16 {
		t.Fatalf("planned %d splits, want 16", len(plan.Splits))
	}
	for i, ps := range plan.Splits {
		r, err := decodeDescriptor(ps.Spec.Descriptor)
		if err != nil {
			t.Fatalf("split %d: %v", i, err)
		}
		if r != ds.splits[i].Range || ps.Spec.ID != ds.splits[i].ID {
			t.Fatalf("split %d: spec %s %s, want %s %s", i, ps.Spec.ID, r, ds.splits[i].ID, ds.splits[i].Range)
		}
		if ps.Spec.Weight != uint64(max(1, r.Len())) {
			t.Fatalf("split %d: weight %d for %d records", i, ps.Spec.Weight, r.Len())
		}
		if ps.Seed != nil {
			t.Fatalf("split %d: unexpected seed", i)
		}
	}
}

func TestFingerprintAndJobFollowTheFlags(t *testing.T) {
	a := planner{ds: newDataset(16, 50_000)}.Fingerprint()
	b := planner{ds: newDataset(16, 50_001)}.Fingerprint()
	c := planner{ds: newDataset(17, 50_000)}.Fingerprint()
	if a == b || a == c || b == c {
		t.Fatalf("fingerprints collide: %q %q %q", a, b, c)
	}
	if a != (planner{ds: newDataset(16, 50_000)}).Fingerprint() {
		t.Fatal("fingerprint is not stable")
	}
	if jobName(a) == jobName(b) {
		t.Fatalf("job names collide: %s", jobName(a))
	}
	if _, err := natsstore.New(natsstore.Config{Servers: []string{"nats://127.0.0.1:4222"}, Job: jobName(a)}, leaseDuration); err != nil {
		t.Fatalf("job name %q rejected: %v", jobName(a), err)
	}
}

func TestDecodeDescriptorRejectsGarbage(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{name: "not json", in: "x"},
		{name: "negative start", in: `{"start":-1,"end":3}`},
		{name: "end before start", in: `{"start":5,"end":3}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := decodeDescriptor([]byte(tt.in)); err == nil {
				t.Fatalf("decoded %q without error", tt.in)
			}
		})
	}
	r := recordRange{Start: 7, End: 7}
	got, err := decodeDescriptor(encodeDescriptor(r))
	if err != nil || got != r {
		t.Fatalf("round trip of %v: %v, %v", r, got, err)
	}
}

func TestDescribeSaysWhyTheWeightIsNotTheRecordCount(t *testing.T) {
	got := newDataset(64, 1_000_000).describe()
	want := "; 3 empty splits at weight 1 (a weight of 0 counts as 1), so the job weighs 1000003"
	if !strings.HasSuffix(got, want) {
		t.Fatalf("describe() = %q, want it to end %q", got, want)
	}
}
