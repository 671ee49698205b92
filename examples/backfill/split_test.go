package main

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/testkit"
)

// readToEnd polls h until split's lane retires, committing its watermarks
// whenever it reaches its end, and fails on a revoked lane.
func (h *harness) readToEnd(split coordination.SplitID) {
	h.t.Helper()
	for {
		switch ev := h.next("CommitReady or LanesRetired of "+string(split), func(driver.Event) bool { return true }).(type) {
		case driver.CommitReady:
			if err := h.drv.Commit(h.watermarksOf(ev.Partitions)); err != nil {
				h.t.Fatal(err)
			}
		case driver.LanesRetired:
			h.src.StopLanes(ev.Lanes)
			return
		case driver.LanesRevoked:
			h.t.Fatalf("lane revoked: %v", ev)
		}
	}
}

func TestACutLaneReadsUpToTheCutAndItsResidualReadsTheRest(t *testing.T) {
	const records = 40_000
	h := newHarness(t, records, 20_000)
	h.script.Gain(spec("s1", recordRange{0, records}), 1, nil)
	h.started()
	h.script.RequestCut("s1", 1, 0.5, 1)
	h.next("the cut request", is[driver.Idle])
	n, err := h.drv.Cut(h.src.Acked())
	if err != nil || n != 1 {
		t.Fatalf("Cut = %d, %v; want one cut", n, err)
	}
	cuts := h.script.Cuts()
	var primary, residual recordRange
	if err := json.Unmarshal(cuts[0].Cut.Primary, &primary); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(cuts[0].Cut.Residual, &residual); err != nil {
		t.Fatal(err)
	}
	if primary.Start != 0 || primary.End != residual.Start || residual.End != records || residual.Len() < 2*h.src.pace.batch ||
		cuts[0].Cut.ResidualWeight != uint64(residual.Len()) || cuts[0].Progress.Watermark > primary.End {
		t.Fatalf("cut primary %v residual %v weight %d at watermark %d: want [0,c) and [c,%d), the residual's weight its records",
			primary, residual, cuts[0].Cut.ResidualWeight, cuts[0].Progress.Watermark, records)
	}
	h.readToEnd("s1")
	if got := h.lastCommit("s1"); !got.Completed || got.Watermark != primary.End {
		t.Fatalf("the cut lane's last commit %+v, want completed at the cut %d", got, primary.End)
	}
	h.script.Gain(coordination.SplitSpec{ID: cuts[0].Residual, Descriptor: cuts[0].Cut.Residual, Weight: cuts[0].Cut.ResidualWeight}, 1, nil)
	h.started()
	h.readToEnd(cuts[0].Residual)
	got := h.tally()
	if got.delivered != records || got.duplicates() != 0 || got.residuals != 1 || len(got.gaps) != 0 {
		t.Fatalf("ledger: %d delivered, %d duplicates, %d residuals, gaps %v; want all %d once, one residual", got.delivered, got.duplicates(), got.residuals, got.gaps, records)
	}
}

func TestALaneRefusesACutTooSmallOrWhenCuttingIsOff(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records int64
		noCut   bool
	}{
		{"too little left", 3_000, false}, // under two batches of 2,000
		{"-runtime-split=false", 40_000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.records, 20_000)
			h.src.noCut = tc.noCut
			h.script.Gain(spec("s1", recordRange{0, tc.records}), 1, nil)
			lanes := h.started()
			if _, ok, err := h.src.TrySplit(lanes.Lanes[0].ID, 0.5); ok || err != nil {
				t.Fatalf("TrySplit = ok %v, %v; want a refusal", ok, err)
			}
			if tc.noCut && h.src.Remaining(lanes.Lanes[0].ID) != 0 {
				t.Fatal("Remaining reported an estimate with cutting off")
			}
		})
	}
}

func TestTheMisestimatedDataSetHidesAQuarterInOneEquallyWeighedSplit(t *testing.T) {
	ds := newMisestimated(64, 1_000_003)
	var sum int64
	for i, s := range ds.splits {
		if i > 0 && s.Range.Start != ds.splits[i-1].Range.End {
			t.Fatalf("split %d starts at %d, not where split %d ends", i, s.Range.Start, i-1)
		}
		sum += s.Range.Len()
		if w := ds.spec(i).Weight; w != uint64(1_000_003/64) {
			t.Fatalf("split %d weighs %d, want the average %d", i, w, 1_000_003/64)
		}
	}
	if sum != 1_000_003 || ds.splits[32].Range.Len() != 1_000_003/4 {
		t.Fatalf("records %d (want 1000003), the big split %d (want a quarter)", sum, ds.splits[32].Range.Len())
	}
	if (planner{ds: ds}).Fingerprint() == (planner{ds: newDataset(64, 1_000_003)}).Fingerprint() {
		t.Fatal("-misestimate shares a job with the plain data set")
	}
	if got := ds.holder(ds.splits[32].Range.Start); got != ds.splits[32].ID {
		t.Fatalf("holder of the big split's first record = %s", got)
	}
}

// TestTheSourcePassesTheSplitterConformanceCheck runs testkit.CheckSplitter
// on the example's source: every instance records to one ledger, and what
// an instance delivered is read back from it, record by record.
func TestTheSourcePassesTheSplitterConformanceCheck(t *testing.T) {
	sink := testLedger(t, embedded(t), "check")
	n := 0
	testkit.CheckSplitter(t, testkit.SplittableSource{
		Split: spec("s1", recordRange{0, 40_000}),
		New: func(t testing.TB) (driver.SourceReader, func() []string) {
			n++
			name := fmt.Sprintf("w%d", n)
			dead := make(chan struct{})
			src := newSource(name, "run1", sink, newReadPace(20_000), dead, &events{})
			t.Cleanup(func() { close(dead); src.wait() })
			return src, func() []string {
				var keys []string
				for _, d := range sink.snapshot() {
					if d.Worker == name {
						for r := d.Start; r < d.End; r++ {
							keys = append(keys, fmt.Sprint(r))
						}
					}
				}
				return keys
			}
		},
	})
}
