package driver_test

import (
	"errors"
	"log/slog"
	"reflect"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
)

func wm(p driver.PartitionID, v int64) driver.Watermark {
	return driver.Watermark{Partition: p, Value: v}
}

func TestCommitEncodesAndCommitsInOrder(t *testing.T) {
	h := newHarness(t)
	la := h.open("a", 1, nil)
	lb := h.open("b", 1, nil)
	if err := h.d.Commit([]driver.Watermark{wm(lb.Partition, 7), wm(la.Partition, 3)}); err != nil {
		t.Fatal(err)
	}
	want := []coordination.Commit{commit("b", progress(7)), commit("a", progress(3))}
	if got := h.script.Commits(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Commits = %v, want %v", got, want)
	}
}

func TestCommitMergesARepeatedPartitionByMax(t *testing.T) {
	h := newHarness(t)
	la := h.open("a", 1, nil)
	if err := h.d.Commit([]driver.Watermark{wm(la.Partition, 3), wm(la.Partition, 9), wm(la.Partition, 5)}); err != nil {
		t.Fatal(err)
	}
	if got := h.script.Commits(); !reflect.DeepEqual(got, []coordination.Commit{commit("a", progress(9))}) {
		t.Fatalf("Commits = %v, want one commit at the max", got)
	}
}

func TestCommitSkipsUnknownRetiredFencedAndCompletedTenancies(t *testing.T) {
	h := newHarness(t)
	lLost := h.open("lost", 1, nil)
	lFenced := h.open("fenced", 1, nil)
	lDone := h.open("done", 1, nil)
	lLive := h.open("live", 1, nil)

	h.script.FailNextCommit("fenced", coordination.Fenced)
	h.src.completeAt["done"] = 10
	if err := h.d.Commit([]driver.Watermark{wm(lFenced.Partition, 1), wm(lDone.Partition, 10)}); err != nil {
		t.Fatal(err)
	}
	h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{lFenced.ID}})
	h.expect(driver.LanesRetired{Lanes: []driver.LaneID{lDone.ID}})
	h.script.Lose("lost")
	h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{lLost.ID}})

	before := len(h.src.calls)
	err := h.d.Commit([]driver.Watermark{
		wm(999, 1), wm(lLost.Partition, 2), wm(lFenced.Partition, 3), wm(lDone.Partition, 11), wm(lLive.Partition, 4),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.src.calls[before:]; !reflect.DeepEqual(got, []string{"EncodeCommit(live)"}) {
		t.Fatalf("source calls = %v, want only the live split encoded", got)
	}
	want := []coordination.Commit{commit("done", completed(10)), commit("live", progress(4))}
	if got := h.script.Commits(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Commits = %v, want %v", got, want)
	}
}

func TestCommitEncodeErrorIsReturnedAndSkipsTheRest(t *testing.T) {
	h := newHarness(t)
	la := h.open("a", 1, nil)
	lb := h.open("b", 1, nil)
	lc := h.open("c", 1, nil)
	bad := errors.New("cannot encode")
	h.src.encodeErr["b"] = bad
	if err := h.d.Commit([]driver.Watermark{wm(la.Partition, 1), wm(lb.Partition, 2), wm(lc.Partition, 3)}); err != bad {
		t.Fatalf("Commit = %v, want the EncodeCommit error unchanged", err)
	}
	if got := h.script.Commits(); !reflect.DeepEqual(got, []coordination.Commit{commit("a", progress(1))}) {
		t.Fatalf("Commits = %v, want only a's", got)
	}
	if h.src.count("EncodeCommit", "c") != 0 {
		t.Fatal("c encoded after b's error")
	}
}

func TestCommitTriage(t *testing.T) {
	for _, tc := range []struct {
		name       string
		outcome    coordination.ErrorKind // 0: lands
		complete   bool
		wantErr    bool
		wantEvent  driver.Event // nil: the lane stays (Idle)
		wantLog    string
		wantCommit bool
	}{
		{name: "landed", wantCommit: true},
		{name: "landed completed", complete: true, wantCommit: true, wantEvent: driver.LanesRetired{}},
		{name: "fenced", outcome: coordination.Fenced, wantEvent: driver.LanesRevoked{}, wantLog: "commit fenced; another worker owns the split"},
		{name: "retryable", outcome: coordination.Retryable, wantLog: "commit not confirmed; the next commit supersedes it"},
		{name: "fatal", outcome: coordination.Fatal, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			la := h.open("a", 1, nil)
			if tc.outcome != 0 {
				h.script.FailNextCommit("a", tc.outcome)
			}
			if tc.complete {
				h.src.completeAt["a"] = 5
			}
			err := h.d.Commit([]driver.Watermark{wm(la.Partition, 5)})
			if tc.wantErr {
				wantErr(t, err, tc.outcome, "scripted "+tc.outcome.String()+" for split a")
			} else if err != nil {
				t.Fatalf("Commit = %v, want nil", err)
			}
			if got := len(h.script.Commits()) == 1; got != tc.wantCommit {
				t.Fatalf("commit recorded = %v, want %v", got, tc.wantCommit)
			}
			if tc.wantLog != "" {
				if attrs := h.mustLog(slog.LevelWarn, tc.wantLog); attrs["split"] != "a" {
					t.Fatalf("log attrs = %v", attrs)
				}
			}
			switch want := tc.wantEvent.(type) {
			case nil:
				h.expect(driver.Idle{})
				if h.src.count("CloseSplit", "a") != 0 {
					t.Fatal("split closed although it is still held")
				}
			case driver.LanesRetired:
				h.expect(driver.LanesRetired{Lanes: []driver.LaneID{la.ID}})
			case driver.LanesRevoked:
				h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{la.ID}})
			default:
				t.Fatalf("bad row %v", want)
			}
		})
	}
}

func TestFencedCommitRetiresOnlyThatSplit(t *testing.T) {
	h := newHarness(t)
	la := h.open("a", 1, nil)
	lb := h.open("b", 1, nil)
	h.script.FailNextCommit("a", coordination.Fenced)
	if err := h.d.Commit([]driver.Watermark{wm(la.Partition, 1), wm(lb.Partition, 2)}); err != nil {
		t.Fatalf("Commit = %v; a fenced commit is not an error", err)
	}
	h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{la.ID}})
	h.expect(driver.Idle{})
	if err := h.d.Commit([]driver.Watermark{wm(la.Partition, 3), wm(lb.Partition, 4)}); err != nil {
		t.Fatal(err)
	}
	want := []coordination.Commit{commit("b", progress(2)), commit("b", progress(4))}
	if got := h.script.Commits(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Commits = %v, want b's only", got)
	}
	if got := h.d.Assignments(); len(got) != 1 || got[0].Split != "b" {
		t.Fatalf("Assignments = %v, want only b", got)
	}
	if h.src.count("CloseSplit", "a") != 1 || h.src.count("CloseSplit", "b") != 0 {
		t.Fatalf("source calls = %v", h.src.calls)
	}
}

func TestRetryableCommitIsSupersededAndNeverResent(t *testing.T) {
	h := newHarness(t)
	la := h.open("a", 1, nil)
	h.script.FailNextCommit("a", coordination.Retryable)
	if err := h.d.Commit([]driver.Watermark{wm(la.Partition, 5)}); err != nil {
		t.Fatalf("Commit = %v; a retryable commit is deferred, not returned", err)
	}
	for range 3 {
		h.expect(driver.Idle{})
	}
	if got := h.script.Commits(); len(got) != 0 {
		t.Fatalf("Commits = %v; deferred progress must never be re-sent by the driver", got)
	}
	if err := h.d.Commit([]driver.Watermark{wm(la.Partition, 8)}); err != nil {
		t.Fatal(err)
	}
	if err := h.d.Shutdown(nil); err != nil {
		t.Fatal(err)
	}
	if got := h.script.Commits(); !reflect.DeepEqual(got, []coordination.Commit{commit("a", progress(8))}) {
		t.Fatalf("Commits = %v, want only the superseding commit", got)
	}
	if got := h.script.FinalCommits(); len(got) != 0 {
		t.Fatalf("FinalCommits = %v; superseded progress must not be re-sent at Shutdown", got)
	}
}

func TestNonCoordinationCommitErrorIsReturned(t *testing.T) {
	h := newHarness(t)
	la := h.open("a", 1, nil)
	plain := errors.New("plain")
	h.c.commitErr = plain
	if err := h.d.Commit([]driver.Watermark{wm(la.Partition, 1)}); err != plain {
		t.Fatalf("Commit = %v, want the plain error unchanged", err)
	}
	h.expect(driver.Idle{}) // still held: nothing staged
	if got := h.d.Assignments(); len(got) != 1 {
		t.Fatalf("Assignments = %v, want a still held", got)
	}
}

func TestSweepCommitsTerminalProgressOfLiveSplitsInPartitionOrder(t *testing.T) {
	h := newHarness(t)
	lb := h.open("b", 1, nil)
	la := h.open("a", 1, nil)
	h.open("c", 1, nil)
	h.src.sweep["a"] = completed(0)
	h.src.sweep["b"] = completed(4)
	h.expect(driver.LanesRetired{Lanes: []driver.LaneID{lb.ID, la.ID}})
	want := []coordination.Commit{commit("b", completed(4)), commit("a", completed(0))}
	if got := h.script.Commits(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Commits = %v, want b then a (ascending partition)", got)
	}
	// Retired splits are not swept again.
	sweepsA := h.src.count("Sweep", "a")
	h.expect(driver.Idle{})
	if h.src.count("Sweep", "a") != sweepsA {
		t.Fatal("a retired split was swept")
	}
}

func TestSweepUsesTheCommitTriage(t *testing.T) {
	h := newHarness(t)
	la := h.open("a", 1, nil)
	h.src.sweep["a"] = completed(4)
	h.script.FailNextCommit("a", coordination.Fenced)
	h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{la.ID}})

	h2 := newHarness(t)
	h2.open("a", 1, nil)
	h2.src.sweep["a"] = completed(4)
	h2.script.FailNextCommit("a", coordination.Fatal)
	wantErr(t, h2.pollErr(), coordination.Fatal, "scripted fatal for split a")

	h3 := newHarness(t)
	h3.open("a", 1, nil)
	sweepErr := errors.New("sweep broke")
	h3.src.sweepErr["a"] = sweepErr
	if err := h3.pollErr(); err != sweepErr {
		t.Fatalf("PollEvents = %v, want the Sweep error unchanged", err)
	}
}

func TestSweepRunsBeforeALaneOpensAndSkipsDrainingSplits(t *testing.T) {
	h := newHarness(t)
	h.src.openErrs["a"] = []error{errors.New("not yet")}
	h.script.Gain(spec("a"), 1, nil)
	h.pollErr()
	if h.src.count("Sweep", "a") == 0 {
		t.Fatal("a held split whose lane is not open was not swept")
	}
	h.poll() // a opens
	h.openDraining("b", nil)
	h.script.Revoke("b")
	h.expect(driver.Idle{})
	before := h.src.count("Sweep", "b")
	h.expect(driver.Idle{})
	if h.src.count("Sweep", "b") != before {
		t.Fatal("a draining split was swept")
	}
}
