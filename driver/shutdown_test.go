package driver_test

import (
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
)

func TestShutdownBuildsOneFinalCommitPerHeldTenancyInPartitionOrder(t *testing.T) {
	h := newHarness(t)
	lWm := h.open("with-watermark", 1, nil) // final watermark given
	lDef := h.open("deferred", 1, nil)      // a deferred commit, not superseded
	h.open("swept", 1, nil)                 // no watermark; Sweep has terminal progress
	h.open("nothing", 1, nil)               // no watermark, nothing deferred, Sweep nil
	lDrain := h.open("draining", 1, nil)    // draining, final watermark marked completed
	lDone := h.open("done", 1, nil)         // completed earlier: no entry
	h.src.completeAt["done"] = 1

	h.script.FailNextCommit("deferred", coordination.Retryable)
	if err := h.d.Commit([]driver.Watermark{wm(lDef.Partition, 4), wm(lDone.Partition, 1)}); err != nil {
		t.Fatal(err)
	}
	h.expect(driver.LanesRetired{Lanes: []driver.LaneID{lDone.ID}})
	h.src.acceptRev["draining"] = true
	h.src.completeAt["draining"] = 3
	h.script.Revoke("draining")
	h.expect(driver.Idle{})
	h.src.sweep["swept"] = completed(0)
	h.src.sweep["draining"] = completed(99) // never swept: it is draining

	if err := h.d.Shutdown([]driver.Watermark{wm(lDrain.Partition, 3), wm(lWm.Partition, 10)}); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	want := [][]coordination.Commit{{
		commit("with-watermark", progress(10)),
		commit("deferred", progress(4)),
		commit("swept", completed(0)),
		commit("draining", progress(3)),
	}}
	if got := h.script.FinalCommits(); !reflect.DeepEqual(got, want) {
		t.Fatalf("FinalCommits = %v, want %v", got, want)
	}
	h.mustLog(slog.LevelError, "completed progress for a draining split; committing it as not completed")
	// swept completed: no longer held; the rest are departed, sorted.
	if got := h.script.DepartedWith(); !reflect.DeepEqual(got, ids("deferred", "draining", "nothing", "with-watermark")) {
		t.Fatalf("DepartedWith = %v", got)
	}
	for _, id := range ids("with-watermark", "deferred", "swept", "nothing", "draining", "done") {
		if got := h.src.count("CloseSplit", id); got != 1 {
			t.Fatalf("CloseSplit(%s) called %d times, want exactly once", id, got)
		}
	}
	if got := len(h.script.Commits()); got != 1 { // only done's
		t.Fatalf("%d plain commits; Shutdown must use CommitFinal only", got)
	}
}

func TestShutdownWithNothingHeldStillDeparts(t *testing.T) {
	h := newHarness(t)
	if err := h.d.Shutdown(nil); err != nil {
		t.Fatal(err)
	}
	if len(h.script.FinalCommits()) != 0 {
		t.Fatal("CommitFinal called with an empty batch")
	}
	if !h.script.Departed() || len(h.script.DepartedWith()) != 0 {
		t.Fatalf("Departed = %v with %v, want true with nothing", h.script.Departed(), h.script.DepartedWith())
	}
}

func TestShutdownAlwaysDepartsAfterAFailedCommitFinal(t *testing.T) {
	h := newHarness(t)
	la := h.open("a", 1, nil)
	h.script.FailNextCommit("a", coordination.Retryable)
	err := h.d.Shutdown([]driver.Watermark{wm(la.Partition, 5)})
	wantErr(t, err, coordination.Retryable, "final commit of split a did not land; its uncommitted tail will replay")
	if !errors.Is(err, coordination.ErrRetryable) {
		t.Fatal("composed error does not match its kind")
	}
	var ce *coordination.Error
	errors.As(err, &ce)
	if ce.Err == nil || !strings.Contains(ce.Err.Error(), "scripted retryable for split a") {
		t.Fatalf("Err = %v, want the entry's error joined", ce.Err)
	}
	if got := h.script.DepartedWith(); !reflect.DeepEqual(got, ids("a")) {
		t.Fatalf("DepartedWith = %v, want [a] (still held)", got)
	}
	if h.src.count("CloseSplit", "a") != 1 {
		t.Fatal("a not closed")
	}
}

func TestShutdownFinalTriage(t *testing.T) {
	h := newHarness(t)
	lDone := h.open("completes", 1, nil)
	lFen := h.open("fenced", 1, nil)
	lKeep := h.open("lands", 1, nil)
	h.src.completeAt["completes"] = 9
	h.script.FailNextCommit("fenced", coordination.Fenced)
	err := h.d.Shutdown([]driver.Watermark{wm(lDone.Partition, 9), wm(lFen.Partition, 2), wm(lKeep.Partition, 3)})
	if err != nil {
		t.Fatalf("Shutdown = %v; a fenced final entry is not a failure", err)
	}
	if got := h.script.DepartedWith(); !reflect.DeepEqual(got, ids("lands")) {
		t.Fatalf("DepartedWith = %v, want only the still-held split", got)
	}
	h.mustLog(slog.LevelWarn, "commit fenced; another worker owns the split")
}

func TestShutdownErrorCompositionPicksTheMostSevereKind(t *testing.T) {
	h := newHarness(t)
	la := h.open("a", 1, nil)
	lb := h.open("b", 1, nil)
	lc := h.open("c", 1, nil)
	ld := h.open("d", 1, nil)
	encodeErr := errors.New("encoder broke")
	h.src.encodeErr["c"] = encodeErr
	h.script.FailNextCommit("a", coordination.Retryable)
	h.script.FailNextCommit("b", coordination.Fatal)
	h.c.departErr = &coordination.Error{Kind: coordination.Retryable, Reason: "hand-back did not confirm for splits [a b c d]; they are handed back again later, or taken once this worker's session ends"}

	err := h.d.Shutdown([]driver.Watermark{wm(la.Partition, 1), wm(lb.Partition, 2), wm(lc.Partition, 3), wm(ld.Partition, 4)})
	wantErr(t, err, coordination.Fatal, strings.Join([]string{
		"final commit of split c did not land; its uncommitted tail will replay",
		"final commit of split a did not land; its uncommitted tail will replay",
		"final commit of split b did not land; its uncommitted tail will replay",
		"depart failed: coordination error (retryable): hand-back did not confirm for splits [a b c d]; they are handed back again later, or taken once this worker's session ends",
	}, "; "))
	for _, want := range []error{encodeErr, h.c.departErr, coordination.ErrFatal, coordination.ErrRetryable} {
		if !errors.Is(err, want) {
			t.Fatalf("errors.Is(err, %v) = false; Err must join every collected error", want)
		}
	}
	if got := h.script.FinalCommits(); !reflect.DeepEqual(got, [][]coordination.Commit{{commit("d", progress(4))}}) {
		t.Fatalf("FinalCommits = %v; the other entries must still run", got)
	}
	if got := h.script.DepartedWith(); !reflect.DeepEqual(got, ids("a", "b", "c", "d")) {
		t.Fatalf("DepartedWith = %v", got)
	}
}

func TestShutdownDepartFailureAloneIsReported(t *testing.T) {
	h := newHarness(t)
	h.c.departErr = &coordination.Error{Kind: coordination.Retryable, Reason: "slow"}
	err := h.d.Shutdown(nil)
	wantErr(t, err, coordination.Retryable, "depart failed: coordination error (retryable): slow")
	if !errors.Is(err, h.c.departErr) {
		t.Fatal("Err does not wrap the Depart error")
	}
}

func TestShutdownSweepErrorIsThatSplitsFailure(t *testing.T) {
	h := newHarness(t)
	h.open("a", 1, nil)
	h.open("b", 1, nil)
	h.src.sweepErr["a"] = errors.New("sweep broke")
	h.src.sweep["b"] = progress(3)
	err := h.d.Shutdown(nil)
	wantErr(t, err, coordination.Fatal, "final commit of split a did not land; its uncommitted tail will replay")
	if got := h.script.FinalCommits(); !reflect.DeepEqual(got, [][]coordination.Commit{{commit("b", progress(3))}}) {
		t.Fatalf("FinalCommits = %v", got)
	}
}

func TestShutdownClosesUnopenedAndIgnoresRetiredTenancies(t *testing.T) {
	h := newHarness(t)
	la := h.open("a", 1, nil)
	h.script.Lose("a")
	h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{la.ID}})
	h.src.openErrs["b"] = []error{errors.New("not yet")}
	h.script.Gain(spec("b"), 1, nil)
	h.pollErr()
	if err := h.d.Shutdown([]driver.Watermark{wm(la.Partition, 5)}); err != nil {
		t.Fatal(err)
	}
	if len(h.script.FinalCommits()) != 0 {
		t.Fatalf("FinalCommits = %v; a lost lane's watermark must be ignored", h.script.FinalCommits())
	}
	if got := h.script.DepartedWith(); !reflect.DeepEqual(got, ids("b")) {
		t.Fatalf("DepartedWith = %v, want the unopened but held b", got)
	}
	if h.src.count("CloseSplit", "a") != 1 || h.src.count("CloseSplit", "b") != 1 {
		t.Fatalf("source calls = %v", h.src.calls)
	}
}
