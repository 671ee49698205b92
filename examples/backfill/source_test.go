package main

import (
	"slices"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
)

func TestSourceCompletesSplits(t *testing.T) {
	tests := []struct {
		name      string
		records   recordRange
		resume    *coordination.SplitProgress
		delivered int64 // records read in this tenancy
	}{
		{name: "fresh", records: recordRange{0, 1000}, delivered: 1000},
		{name: "resumed midway", records: recordRange{0, 1000}, resume: &coordination.SplitProgress{Watermark: 600}, delivered: 400},
		{name: "resumed at its end", records: recordRange{0, 1000}, resume: &coordination.SplitProgress{Watermark: 1000}, delivered: 0},
		{name: "empty", records: recordRange{500, 500}, delivered: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, 1000, 100_000)
			h.script.Gain(spec("s1", tt.records), 1, tt.resume)
			h.started()
			for done := false; !done; {
				switch ev := h.next("CommitReady or LanesRetired", func(driver.Event) bool { return true }).(type) {
				case driver.CommitReady:
					if err := h.drv.Commit(h.watermarksOf(ev.Partitions)); err != nil {
						t.Fatal(err)
					}
				case driver.LanesRetired:
					h.src.StopLanes(ev.Lanes)
					done = true
				case driver.LanesRevoked:
					t.Fatalf("lane revoked: %v", ev)
				}
			}
			got := h.lastCommit("s1")
			if !got.Completed || got.Watermark != tt.records.End {
				t.Fatalf("last commit %+v, want completed at %d", got, tt.records.End)
			}
			if got := h.tally(); got.deliveries != tt.delivered || got.duplicates() != 0 {
				t.Fatalf("ledger holds %d deliveries (duplicates %d), want %d", got.deliveries, got.duplicates(), tt.delivered)
			}
			if got := h.src.delivered.Load(); got != tt.delivered {
				t.Fatalf("source counted %d deliveries, want %d", got, tt.delivered)
			}
			if n := h.src.held.Load(); n != 0 {
				t.Fatalf("%d lanes still open after retirement", n)
			}
			if len(h.ev.ends) != 1 || !h.ev.ends[0].complete || h.src.completed.Load() != 1 {
				t.Fatalf("lane ends %+v, completed %d; want one complete end", h.ev.ends, h.src.completed.Load())
			}
		})
	}
}

func TestSourceDrainsARevokedSplitWithoutReplay(t *testing.T) {
	h := newHarness(t, 100_000, 400) // 20 records per 50ms: far from the end
	h.script.Gain(spec("s1", recordRange{0, 100_000}), 3, nil)
	h.started()
	eventually(t, "some records delivered", func() bool { return h.tally().delivered >= 40 })
	if err := h.drv.Commit(h.src.Acked()); err != nil {
		t.Fatal(err)
	}
	h.script.Revoke("s1")
	ev := h.next("LanesRetired", func(ev driver.Event) bool {
		if _, ok := ev.(driver.LanesRevoked); ok {
			t.Fatalf("revocation was forced, not drained: %v", ev)
		}
		return is[driver.LanesRetired](ev)
	}).(driver.LanesRetired)
	h.src.StopLanes(ev.Lanes)
	ends := h.ev.ends
	if len(ends) != 1 || !ends[0].drained {
		t.Fatalf("lane ends %+v, want one drained lane", ends)
	}
	cut := h.lastCommit("s1")
	if cut.Completed {
		t.Fatalf("drained cut %+v is marked completed", cut)
	}
	if got := h.tally().delivered; cut.Watermark != got || cut.Watermark != ends[0].acked {
		t.Fatalf("cut at %d, but the ledger holds %d records and the lane acked %d: the next owner would replay or skip",
			cut.Watermark, got, ends[0].acked)
	}
	if got := h.script.ReleasedDrained(); !slices.Equal(got, []coordination.SplitID{"s1"}) {
		t.Fatalf("released drained %v, want [s1]", got)
	}
	if got := h.script.Declined(); len(got) != 0 {
		t.Fatalf("declined %v, want none", got)
	}
}

func TestSourceStopsReadingALostSplit(t *testing.T) {
	h := newHarness(t, 100_000, 400)
	h.script.Gain(spec("s1", recordRange{0, 100_000}), 1, nil)
	h.started()
	eventually(t, "some records delivered", func() bool { return h.tally().delivered > 0 })
	h.script.Lose("s1")
	ev := h.next("LanesRevoked", is[driver.LanesRevoked]).(driver.LanesRevoked)
	h.src.StopLanes(ev.Lanes)
	ends := h.ev.ends
	if len(ends) != 1 || ends[0].drained || ends[0].complete {
		t.Fatalf("lane ends %+v, want one lost lane", ends)
	}
	// StopLanes returned, so the reader has exited: nothing more arrives.
	if got := h.tally().delivered; got != ends[0].acked {
		t.Fatalf("the ledger holds %d records after the lane stopped at %d", got, ends[0].acked)
	}
	if _, err := h.src.EncodeCommit("s1", 10); err == nil {
		t.Fatal("EncodeCommit accepted a closed split")
	}
}

func TestSourceRejectsResumeOutsideTheSplit(t *testing.T) {
	h := newHarness(t, 1000, 100_000)
	h.script.Gain(spec("s1", recordRange{0, 1000}), 2, &coordination.SplitProgress{Watermark: 1001})
	for range 10 {
		if _, err := h.drv.PollEvents(0); err != nil {
			t.Fatalf("PollEvents: %v; a rejected resume is poison, not an error of the run", err)
		}
	}
	failed := h.script.Failed()
	if len(failed) != 1 || failed[0].Split != "s1" || failed[0].Epoch != 2 {
		t.Fatalf("fail calls %+v, want one for s1 at epoch 2", failed)
	}
	if got := h.tally().deliveries; got != 0 {
		t.Fatalf("read %d records of a rejected split", got)
	}
}

func TestSourceEncodeCommitNeverCompletesWhileDraining(t *testing.T) {
	h := newHarness(t, 100, 100_000)
	h.script.Gain(spec("s1", recordRange{0, 100}), 1, nil)
	h.started()
	if !h.src.BeginRevoke("s1") {
		t.Fatal("BeginRevoke refused an open split")
	}
	p, err := h.src.EncodeCommit("s1", 100)
	if err != nil || p.Completed {
		t.Fatalf("EncodeCommit while draining: %+v, %v; want not completed", p, err)
	}
	if p, _ := h.src.Sweep("s1"); p != nil {
		t.Fatalf("Sweep of a draining split returned %+v", p)
	}
	if _, err := h.src.EncodeCommit("s1", 101); err == nil {
		t.Fatal("EncodeCommit accepted a watermark past the split's end")
	}
	if h.src.BeginRevoke("nope") {
		t.Fatal("BeginRevoke accepted a split that is not open")
	}
}

func TestSourceReportsTheSplitsPreviousTenancy(t *testing.T) {
	h := newHarness(t, 1000, 100_000)
	if err := h.sink.record("s1.other.7", delivery{Split: "s1", Worker: "w9", Start: 0, End: 700}); err != nil {
		t.Fatal(err)
	}
	h.script.Gain(spec("s1", recordRange{0, 1000}), 2, &coordination.SplitProgress{Watermark: 500})
	h.started()
	if len(h.ev.gains) != 1 || h.ev.gains[0] == nil || h.ev.gains[0].Worker != "w9" || h.ev.gains[0].End != 700 {
		t.Fatalf("gains %+v, want one naming w9's delivery up to 700", h.ev.gains)
	}
	if got, want := takeoverLine("w1", "s1", 500, *h.ev.gains[0]), "w1 took over s1 from w9 at record 500, its last commit; 200 records delivered after it will replay"; got != want {
		t.Fatalf("takeover line %q, want %q", got, want)
	}
}

func TestSourceStopsAnUnstartedLaneWithoutWaiting(t *testing.T) {
	h := newHarness(t, 1000, 100_000)
	h.script.Gain(spec("s1", recordRange{0, 1000}), 1, nil)
	ev := h.next("LanesAdded", is[driver.LanesAdded]).(driver.LanesAdded)
	done := make(chan struct{})
	go func() { h.src.StopLanes([]driver.LaneID{ev.Lanes[0].ID}); close(done) }()
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatal("StopLanes of a lane never started blocked")
	}
	if p, err := h.src.DrainReady("s1"); p != nil || err != nil {
		t.Fatalf("DrainReady of a live lane = %+v, %v; want nil", p, err)
	}
}

// TestLedgerKeysOfTwoWorkersNeverCollide runs two workers' sources of one
// process run on the same split with the same lane id, as after a move
// between them: each keeps its own ledger entry.
func TestLedgerKeysOfTwoWorkersNeverCollide(t *testing.T) {
	sink := testLedger(t, embedded(t), "test")
	dead := make(chan struct{})
	defer close(dead)
	var keys []string
	for _, name := range []string{"w1", "w2"} {
		src := newSource(name, "run1", sink, newReadPace(100_000), dead, &events{})
		if err := src.OpenSplit(driver.Opening{Split: spec("s1", recordRange{0, 10}), Lane: 1, Partition: 1, Waker: coordination.NewWaker()}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, src.lanes["s1"].key)
	}
	if keys[0] == keys[1] {
		t.Fatalf("both workers' tenancies record under %q: one would overwrite the other's deliveries", keys[0])
	}
}
