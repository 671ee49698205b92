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

func TestRevocationAcceptedDrainedCommittedAndReleasedInOneCall(t *testing.T) {
	h := newHarness(t)
	la := h.openDraining("a", progress(12))
	h.script.Revoke("a")
	h.expect(driver.LanesRetired{Lanes: []driver.LaneID{la.ID}})
	if got := h.script.Commits(); !reflect.DeepEqual(got, []coordination.Commit{commit("a", progress(12))}) {
		t.Fatalf("Commits = %v, want the drain cut", got)
	}
	if got := h.script.ReleasedDrained(); !reflect.DeepEqual(got, ids("a")) {
		t.Fatalf("ReleasedDrained = %v, want [a]", got)
	}
	if len(h.script.Released()) != 0 || len(h.script.Declined()) != 0 {
		t.Fatal("a drained split was released plainly or declined")
	}
	want := []string{"OpenSplit(a)", "BeginRevoke(a)", "DrainReady(a)", "CloseSplit(a)"}
	if got := withoutSweeps(h.src.calls); !reflect.DeepEqual(got, want) {
		t.Fatalf("source calls = %v, want %v", h.src.calls, want)
	}
}

// withoutSweeps drops the Sweep calls, which happen on every poll.
func withoutSweeps(calls []string) []string {
	var out []string
	for _, c := range calls {
		if !strings.HasPrefix(c, "Sweep(") {
			out = append(out, c)
		}
	}
	return out
}

func TestDrainWaitsForTheCutAndCommitsWatermarksMeanwhile(t *testing.T) {
	h := newHarness(t)
	la := h.openDraining("a", nil)
	h.script.Revoke("a")
	h.expect(driver.Idle{})
	h.expect(driver.Idle{})
	if got := h.src.count("DrainReady", "a"); got != 2 {
		t.Fatalf("DrainReady called %d times, want once per poll", got)
	}
	// A draining split is still committed.
	if err := h.d.Commit([]driver.Watermark{wm(la.Partition, 6)}); err != nil {
		t.Fatal(err)
	}
	h.src.drainCut["a"] = progress(7)
	h.expect(driver.LanesRetired{Lanes: []driver.LaneID{la.ID}})
	want := []coordination.Commit{commit("a", progress(6)), commit("a", progress(7))}
	if got := h.script.Commits(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Commits = %v, want %v", got, want)
	}
}

func TestSecondRevokeOfADrainingSplitDoesNothing(t *testing.T) {
	h := newHarness(t)
	h.openDraining("a", nil)
	h.script.Revoke("a")
	h.expect(driver.Idle{})
	h.script.Revoke("a")
	h.expect(driver.Idle{})
	if got := h.src.count("BeginRevoke", "a"); got != 1 {
		t.Fatalf("BeginRevoke called %d times, want 1", got)
	}
	if got := h.script.Declined(); len(got) != 0 {
		t.Fatalf("Declined = %v, want nothing", got)
	}
}

func TestRevocationsTheDriverCannotDrainAreDeclinedOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(h *harness)
		asked bool // whether BeginRevoke may be called
	}{
		{"unheld split", func(h *harness) { h.script.Revoke("a") }, false},
		{"gain and revoke in one batch", func(h *harness) {
			h.script.Gain(spec("a"), 1, nil)
			h.script.Revoke("a")
		}, false},
		{"source refused", func(h *harness) {
			h.open("a", 1, nil)
			h.script.Revoke("a")
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.setup(h)
			for range 3 {
				if _, err := h.d.PollEvents(0); err != nil {
					t.Fatal(err)
				}
			}
			if got := h.script.Declined(); !reflect.DeepEqual(got, ids("a")) {
				t.Fatalf("Declined = %v, want exactly one decline of a", got)
			}
			if asked := h.src.count("BeginRevoke", "a") > 0; asked != tc.asked {
				t.Fatalf("BeginRevoke asked = %v, want %v", asked, tc.asked)
			}
		})
	}
}

// A revocation that reaches a lane which read its whole range (the source
// refuses to drain it, its Sweep reports completed progress) is answered by
// committing that completion, not declined: a decline forces the split away
// and its next owner reads it all again.
func TestRevocationOfAFinishedLaneCommitsItsCompletion(t *testing.T) {
	h := newHarness(t)
	la := h.open("a", 1, nil)
	h.src.sweep["a"] = completed(9)
	h.script.Revoke("a")
	h.expect(driver.LanesRetired{Lanes: []driver.LaneID{la.ID}})
	if got := h.script.Commits(); !reflect.DeepEqual(got, []coordination.Commit{commit("a", completed(9))}) {
		t.Fatalf("Commits = %v, want the completion", got)
	}
	if got := h.script.Declined(); len(got) != 0 {
		t.Fatalf("Declined = %v, want nothing", got)
	}
}

func TestDeclineErrorOnlyLogs(t *testing.T) {
	h := newHarness(t)
	h.c.declineErr = &coordination.Error{Kind: coordination.Retryable, Reason: "hand-back did not confirm"}
	h.script.Revoke("a")
	h.expect(driver.Idle{})
	if attrs := h.mustLog(slog.LevelWarn, "could not decline revocation"); attrs["split"] != "a" {
		t.Fatalf("log attrs = %v", attrs)
	}
}

func TestDrainCutMarkedCompletedIsCommittedAsNotCompleted(t *testing.T) {
	h := newHarness(t)
	la := h.openDraining("a", completed(9))
	h.script.Revoke("a")
	h.expect(driver.LanesRetired{Lanes: []driver.LaneID{la.ID}})
	if got := h.script.Commits(); !reflect.DeepEqual(got, []coordination.Commit{commit("a", progress(9))}) {
		t.Fatalf("Commits = %v, want the cut with Completed false", got)
	}
	h.mustLog(slog.LevelError, "DrainReady returned completed progress; committing it as not completed")
}

func TestCommitOfADrainingSplitStripsCompleted(t *testing.T) {
	h := newHarness(t)
	la := h.openDraining("a", nil)
	h.src.completeAt["a"] = 5
	h.script.Revoke("a")
	h.expect(driver.Idle{})
	if err := h.d.Commit([]driver.Watermark{wm(la.Partition, 5)}); err != nil {
		t.Fatal(err)
	}
	if got := h.script.Commits(); !reflect.DeepEqual(got, []coordination.Commit{commit("a", progress(5))}) {
		t.Fatalf("Commits = %v, want Completed stripped", got)
	}
	h.mustLog(slog.LevelError, "completed progress for a draining split; committing it as not completed")
	h.expect(driver.Idle{}) // still draining, not retired
}

func TestFencedDrainCommitReleasesNothing(t *testing.T) {
	h := newHarness(t)
	la := h.openDraining("a", progress(3))
	h.script.FailNextCommit("a", coordination.Fenced)
	h.script.Revoke("a")
	h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{la.ID}})
	if got := h.script.ReleasedDrained(); len(got) != 0 {
		t.Fatalf("ReleasedDrained = %v, want nothing after a fenced cut", got)
	}
}

func TestRetryableDrainCommitStaysDrainingAndAsksAgain(t *testing.T) {
	h := newHarness(t)
	la := h.openDraining("a", progress(3))
	h.script.FailNextCommit("a", coordination.Retryable)
	h.script.Revoke("a")
	h.expect(driver.Idle{})
	if len(h.script.ReleasedDrained()) != 0 {
		t.Fatal("released after an unconfirmed cut")
	}
	h.expect(driver.LanesRetired{Lanes: []driver.LaneID{la.ID}})
	if got := h.src.count("DrainReady", "a"); got != 2 {
		t.Fatalf("DrainReady called %d times, want 2", got)
	}
	if got := h.script.ReleasedDrained(); !reflect.DeepEqual(got, ids("a")) {
		t.Fatalf("ReleasedDrained = %v", got)
	}
}

func TestDrainErrorsAreReturned(t *testing.T) {
	h := newHarness(t)
	h.openDraining("a", nil)
	bad := errors.New("drain state broken")
	h.src.drainErr["a"] = bad
	h.script.Revoke("a")
	if err := h.pollErr(); err != bad {
		t.Fatalf("PollEvents = %v, want the DrainReady error unchanged", err)
	}

	h2 := newHarness(t)
	h2.openDraining("a", progress(1))
	h2.script.FailNextCommit("a", coordination.Fatal)
	h2.script.Revoke("a")
	wantErr(t, h2.pollErr(), coordination.Fatal, "scripted fatal for split a")
}

func TestDrainedHandBackFailureOnlyLogs(t *testing.T) {
	h := newHarness(t)
	la := h.open("a", 1, nil)
	h.c.releaseDrainedErr = &coordination.Error{Kind: coordination.Retryable, Reason: "hand-back did not confirm"}
	h.src.acceptRev["a"] = true
	h.src.drainCut["a"] = progress(2)
	h.script.Revoke("a")
	h.expect(driver.LanesRetired{Lanes: []driver.LaneID{la.ID}})
	h.mustLog(slog.LevelWarn, "drained split hand-back failed; its lease will expire")
}

func TestLostDuringDrainRetiresAsRevoked(t *testing.T) {
	h := newHarness(t)
	la := h.openDraining("a", nil)
	h.script.Revoke("a")
	h.expect(driver.Idle{})
	h.script.Lose("a") // the drain deadline passed: forced
	h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{la.ID}})
	if h.src.count("CloseSplit", "a") != 1 || len(h.script.ReleasedDrained()) != 0 {
		t.Fatalf("source calls %v, released %v", h.src.calls, h.script.ReleasedDrained())
	}
}
