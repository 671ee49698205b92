package driver_test

import (
	"reflect"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
)

func TestOpenFailureIsRetriedWithAFreshLaneID(t *testing.T) {
	h := newHarness(t)
	busy := &coordination.Error{Kind: coordination.Retryable, Reason: "fetcher pool busy"}
	h.src.openErrs["a"] = []error{busy}
	h.script.Gain(spec("a"), 1, nil)
	h.script.Gain(spec("b"), 1, nil)
	if err := h.pollErr(); err != busy {
		t.Fatalf("PollEvents = %v, want the OpenSplit error unchanged", err)
	}
	// b opened in the same round and is announced first; a is retried on
	// the call after, with a fresh lane id (lane 1 was burned).
	ev := h.poll()
	if added, ok := ev.(driver.LanesAdded); !ok || len(added.Lanes) != 1 || added.Lanes[0].Split.ID != "b" || added.Lanes[0].ID != 2 {
		t.Fatalf("PollEvents = %#v, want LanesAdded for b on lane 2", ev)
	}
	ev = h.poll()
	added, ok := ev.(driver.LanesAdded)
	if !ok || len(added.Lanes) != 1 || added.Lanes[0].Split.ID != "a" || added.Lanes[0].ID != 3 {
		t.Fatalf("PollEvents = %#v, want LanesAdded for a on fresh lane 3", ev)
	}
	if got := h.src.count("OpenSplit", "a"); got != 2 {
		t.Fatalf("OpenSplit(a) called %d times, want 2", got)
	}
	if h.src.count("CloseSplit", "a") != 0 {
		t.Fatal("a failed open closed the tenancy")
	}
}

func TestLaneAndPartitionIDsAreNeverReused(t *testing.T) {
	h := newHarness(t)
	lanes := map[driver.LaneID]bool{}
	parts := map[driver.PartitionID]bool{}
	for epoch := coordination.LeaseEpoch(1); epoch <= 5; epoch++ {
		l := h.open("a", epoch, nil)
		if lanes[l.ID] || parts[l.Partition] || l.ID == 0 || l.Partition == 0 {
			t.Fatalf("lane %+v reuses an id", l)
		}
		lanes[l.ID], parts[l.Partition] = true, true
		h.script.Lose("a")
		h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{l.ID}})
	}
}

func TestRetiredLanesAreStagedByHowTheTenancyEnded(t *testing.T) {
	h := newHarness(t)
	lDone := h.open("done", 1, nil)
	lDrained := h.open("drained", 1, nil)
	lLost := h.open("lost", 1, nil)
	lFailed := h.open("failed", 1, nil)
	h.src.sweep["done"] = completed(3)
	h.src.acceptRev["drained"] = true
	h.src.drainCut["drained"] = progress(2)
	if err := h.d.Fail("failed", "poison"); err != nil {
		t.Fatal(err)
	}
	h.script.Revoke("drained")
	h.script.Lose("lost")
	h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{lFailed.ID}})
	h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{lLost.ID}})
	h.expect(driver.LanesRetired{Lanes: []driver.LaneID{lDone.ID, lDrained.ID}})
	for _, id := range ids("done", "drained", "lost", "failed") {
		if got := h.src.count("CloseSplit", id); got != 1 {
			t.Fatalf("CloseSplit(%s) called %d times, want 1", id, got)
		}
	}
}

func TestLateWatermarksOfRetiredLanesAreIgnored(t *testing.T) {
	h := newHarness(t)
	la := h.open("a", 1, nil)
	h.script.Lose("a")
	h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{la.ID}})
	// Before and after the next PollEvents prunes the tenancy.
	for range 2 {
		if err := h.d.Commit([]driver.Watermark{wm(la.Partition, 9)}); err != nil {
			t.Fatal(err)
		}
		h.expect(driver.Idle{})
	}
	if got := h.script.Commits(); len(got) != 0 {
		t.Fatalf("Commits = %v, want nothing", got)
	}
	if h.src.count("EncodeCommit", "a") != 0 {
		t.Fatal("a retired tenancy was encoded")
	}
}

func TestOpeningCarriesACopyOfTheSpec(t *testing.T) {
	h := newHarness(t)
	l := h.open("a", 1, nil)
	h.src.opens[0].Split.Descriptor[0] = 'X'
	if !reflect.DeepEqual(l.Split, spec("a")) {
		t.Fatalf("lane spec = %+v; the Opening aliases the driver's copy", l.Split)
	}
}
