package driver_test

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/testkit"
)

// splitSource is a recording source whose lanes can be cut.
type splitSource struct {
	*recSource
	remaining map[driver.LaneID]uint64
	refuse    bool            // TrySplit answers !ok
	asked     []float64       // keep of every TrySplit call
	cut       driver.Cut      // what an accepted TrySplit returns
	lanes     []driver.LaneID // lane of every TrySplit call
}

func (s *splitSource) Remaining(lane driver.LaneID) uint64 { return s.remaining[lane] }

func (s *splitSource) TrySplit(lane driver.LaneID, keep float64) (driver.Cut, bool, error) {
	s.asked = append(s.asked, keep)
	s.lanes = append(s.lanes, lane)
	if s.refuse {
		return driver.Cut{}, false, nil
	}
	return s.cut, true, nil
}

var _ driver.Splitter = (*splitSource)(nil)

// newSplitHarness is a started harness whose source can cut its lanes.
func newSplitHarness(t *testing.T) (*harness, *splitSource) {
	t.Helper()
	sc, script := testkit.NewScripted()
	src := &splitSource{recSource: newSource(), remaining: map[driver.LaneID]uint64{},
		cut: driver.Cut{Primary: []byte("0-50"), Residual: []byte("50-100"), ResidualWeight: 50}}
	h := &harness{t: t, c: &hookedCoordinator{ScriptedCoordinator: sc}, script: script, src: src.recSource}
	h.d = driver.New(h.c, src, driver.WithLogger(slog.New(logSink{mu: &h.mu, recs: &h.logs})))
	if err := h.d.Start(planner{}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return h, src
}

// requestCut queues a cut request and polls it in.
func (h *harness) requestCut(id coordination.SplitID, epoch coordination.LeaseEpoch, keep float64, parts ...int) {
	h.t.Helper()
	h.script.RequestCut(id, epoch, keep, append(parts, 1)[0])
	h.expect(driver.Idle{})
}

func TestACutRequestCutsTheLaneAndCommitsTheCutAtItsAcknowledgedWatermark(t *testing.T) {
	h, src := newSplitHarness(t)
	lane := h.open("s", 3, progress(10))
	h.requestCut("s", 3, 0.75)
	n, err := h.d.Cut([]driver.Watermark{{Partition: lane.Partition, Value: 20}})
	if err != nil || n != 1 {
		t.Fatalf("Cut = %d, %v; want 1 durable cut", n, err)
	}
	if !slices.Equal(src.asked, []float64{0.75}) || !slices.Equal(src.lanes, []driver.LaneID{lane.ID}) {
		t.Fatalf("TrySplit calls: keep %v on lanes %v, want 0.75 on lane %d", src.asked, src.lanes, lane.ID)
	}
	cuts := h.script.Cuts()
	if len(cuts) != 1 || cuts[0].Split != "s" || cuts[0].Progress.Watermark != 20 || cuts[0].Progress.Completed ||
		string(cuts[0].Cut.Primary) != "0-50" || string(cuts[0].Cut.Residual) != "50-100" || cuts[0].Cut.ResidualWeight != 50 {
		t.Fatalf("CommitCut calls = %+v, want one of s at watermark 20 with the source's cut", cuts)
	}
	if a := h.mustLog(slog.LevelInfo, "split cut at runtime; its residual is a new split"); a["residual"] != "_s_3_1" {
		t.Fatalf("logged residual %q, want _s_3_1", a["residual"])
	}
	// The request was acted on once: a second Cut does nothing.
	if n, err := h.d.Cut(nil); n != 0 || err != nil || len(src.asked) != 1 {
		t.Fatalf("second Cut = %d, %v with %d TrySplit calls; want nothing", n, err, len(src.asked))
	}
}

func TestACutRequestTheDriverCannotActOnWritesNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		epoch  coordination.LeaseEpoch
		refuse bool
		acked  bool
	}{
		{"another epoch", 2, false, true},
		{"the source refuses", 3, true, true},
		{"nothing acknowledged or committed", 3, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, src := newSplitHarness(t)
			src.refuse = tc.refuse
			lane := h.open("s", 3, nil)
			h.requestCut("s", tc.epoch, 0.5)
			var acked []driver.Watermark
			if tc.acked {
				acked = []driver.Watermark{{Partition: lane.Partition, Value: 5}}
			}
			if n, err := h.d.Cut(acked); n != 0 || err != nil {
				t.Fatalf("Cut = %d, %v; want 0, nil", n, err)
			}
			if len(h.script.Cuts()) != 0 {
				t.Fatalf("CommitCut called: %+v", h.script.Cuts())
			}
		})
	}
}

func TestAPlainSourceIgnoresCutRequests(t *testing.T) {
	h := newHarness(t)
	lane := h.open("s", 1, progress(1))
	h.requestCut("s", 1, 0.5)
	if n, err := h.d.Cut([]driver.Watermark{{Partition: lane.Partition, Value: 5}}); n != 0 || err != nil {
		t.Fatalf("Cut = %d, %v; want 0, nil", n, err)
	}
	h.d.ReportRemaining()
	if len(h.script.Cuts()) != 0 {
		t.Fatalf("CommitCut called for a source that cannot cut: %+v", h.script.Cuts())
	}
	if _, ok := h.script.Remaining("s"); ok {
		t.Fatal("an estimate was reported for a source that cannot cut")
	}
}

func TestACutNotConfirmedIsCommittedBeforeAnythingElseAndBeforeCompletion(t *testing.T) {
	h, src := newSplitHarness(t)
	lane := h.open("s", 1, progress(1))
	src.completeAt["s"] = 30
	h.script.FailNextCommitCut("s", coordination.Retryable)
	h.script.FailNextCommitCut("s", coordination.Retryable)
	h.requestCut("s", 1, 0.5)
	if n, err := h.d.Cut([]driver.Watermark{{Partition: lane.Partition, Value: 10}}); n != 0 || err != nil {
		t.Fatalf("Cut = %d, %v; want 0 durable, nil", n, err)
	}
	// The lane reaches its (cut) end: the completing commit must wait for the cut.
	if err := h.d.Commit([]driver.Watermark{{Partition: lane.Partition, Value: 30}}); err != nil {
		t.Fatal(err)
	}
	if len(h.script.Commits()) != 0 || len(h.script.Cuts()) != 0 {
		t.Fatalf("a commit went without its cut: commits %+v, cuts %+v", h.script.Commits(), h.script.Cuts())
	}
	if len(src.asked) != 1 {
		t.Fatalf("TrySplit called %d times, want once: a retry carries the same cut", len(src.asked))
	}
	if err := h.d.Commit([]driver.Watermark{{Partition: lane.Partition, Value: 30}}); err != nil {
		t.Fatal(err)
	}
	cuts, commits := h.script.Cuts(), h.script.Commits()
	if len(cuts) != 1 || cuts[0].Progress.Watermark != 30 || cuts[0].Progress.Completed {
		t.Fatalf("cuts = %+v, want the cut once, at 30, not completed", cuts)
	}
	if len(commits) != 1 || !commits[0].Progress.Completed {
		t.Fatalf("commits = %+v, want the completing commit after the cut", commits)
	}
	h.expect(driver.LanesRetired{Lanes: []driver.LaneID{lane.ID}})
}

func TestAFencedCutEndsTheLane(t *testing.T) {
	h, _ := newSplitHarness(t)
	lane := h.open("s", 1, progress(1))
	h.script.FailNextCommitCut("s", coordination.Fenced)
	h.requestCut("s", 1, 0.5)
	if n, err := h.d.Cut([]driver.Watermark{{Partition: lane.Partition, Value: 10}}); n != 0 || err != nil {
		t.Fatalf("Cut = %d, %v; want 0, nil", n, err)
	}
	h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{lane.ID}})
}

func TestShutdownNeverCompletesASplitWhoseCutIsNotConfirmed(t *testing.T) {
	h, src := newSplitHarness(t)
	lane := h.open("s", 1, progress(1))
	src.completeAt["s"] = 30
	h.script.FailNextCommitCut("s", coordination.Retryable)
	h.script.FailNextCommitCut("s", coordination.Retryable)
	h.requestCut("s", 1, 0.5)
	if _, err := h.d.Cut([]driver.Watermark{{Partition: lane.Partition, Value: 10}}); err != nil {
		t.Fatal(err)
	}
	if err := h.d.Shutdown([]driver.Watermark{{Partition: lane.Partition, Value: 30}}); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	final := h.script.FinalCommits()
	if len(final) != 1 || len(final[0]) != 1 || final[0][0].Progress.Watermark != 30 || final[0][0].Progress.Completed {
		t.Fatalf("final commits = %+v, want s at 30 as not completed", final)
	}
}

func TestReportRemainingHandsEveryOpenLanesEstimateToTheCoordinator(t *testing.T) {
	h, src := newSplitHarness(t)
	a := h.open("a", 2, nil)
	h.open("b", 5, nil)
	src.remaining[a.ID] = 70
	h.d.ReportRemaining()
	if e, ok := h.script.Remaining("a"); !ok || e != (testkit.Estimate{Epoch: 2, Remaining: 70}) {
		t.Fatalf("estimate of a = %+v, %v; want epoch 2, 70", e, ok)
	}
	if e, ok := h.script.Remaining("b"); ok {
		t.Fatalf("estimate of b = %+v; want none (its lane reported 0)", e)
	}
}

// rangeSource is a splitSource whose lane is a range of records, cut where
// TrySplit's keep says.
type rangeSource struct {
	*splitSource
	lo, hi float64
}

func (s *rangeSource) TrySplit(lane driver.LaneID, keep float64) (driver.Cut, bool, error) {
	s.asked = append(s.asked, keep)
	at := s.lo + keep*(s.hi-s.lo)
	cut := driver.Cut{Primary: fmt.Appendf(nil, "%.0f-%.0f", s.lo, at), Residual: fmt.Appendf(nil, "%.0f-%.0f", at, s.hi), ResidualWeight: uint64(s.hi - at)}
	s.hi = at
	return cut, true, nil
}

func TestARequestForSeveralPartsCutsThemOffInEqualShares(t *testing.T) {
	sc, script := testkit.NewScripted()
	src := &rangeSource{splitSource: &splitSource{recSource: newSource()}, lo: 0, hi: 1000}
	h := &harness{t: t, c: &hookedCoordinator{ScriptedCoordinator: sc}, script: script, src: src.recSource}
	h.d = driver.New(h.c, src, driver.WithLogger(slog.New(logSink{mu: &h.mu, recs: &h.logs})))
	if err := h.d.Start(planner{}); err != nil {
		t.Fatal(err)
	}
	lane := h.open("s", 1, progress(1))
	h.requestCut("s", 1, 0.25, 3) // the primary and 3 residuals, a quarter each
	if n, err := h.d.Cut([]driver.Watermark{{Partition: lane.Partition, Value: 1}}); n != 3 || err != nil {
		t.Fatalf("Cut = %d, %v; want 3 cuts", n, err)
	}
	var residuals []string
	for _, c := range h.script.Cuts() {
		residuals = append(residuals, string(c.Cut.Residual))
	}
	if want := []string{"750-1000", "500-750", "250-500"}; !slices.Equal(residuals, want) || string(h.script.Cuts()[2].Cut.Primary) != "0-250" {
		t.Fatalf("residuals %v (primary %s), want %v and 0-250", residuals, h.script.Cuts()[2].Cut.Primary, want)
	}
}

// TestARefusedCutHandsTheSplitBackUncut: a cut the coordinator refuses for
// good (coordination.ErrCutRefused; here a residual equal to its primary,
// as a source with a broken TrySplit returns) is not an error of the run:
// the lane, which stopped at the cut, commits its progress without the
// cut, the split is handed back un-cut (Release) and the lane retired;
// later requests for the split are ignored and its estimates no longer
// reported, since the same cut would be refused again (docs/protocol.md,
// "Runtime split", "Refused cuts").
func TestARefusedCutHandsTheSplitBackUncut(t *testing.T) {
	h, src := newSplitHarness(t)
	src.cut = driver.Cut{Primary: []byte("0-100"), Residual: []byte("0-100"), ResidualWeight: 50}
	lane := h.open("s", 3, progress(10))
	src.remaining[lane.ID] = 90
	h.requestCut("s", 3, 0.5)
	if n, err := h.d.Cut([]driver.Watermark{{Partition: lane.Partition, Value: 20}}); n != 0 || err != nil {
		t.Fatalf("Cut = %d, %v; want no cut and no error", n, err)
	}
	if len(h.script.Cuts()) != 0 {
		t.Fatalf("a refused cut was recorded: %+v", h.script.Cuts())
	}
	commits := h.script.Commits()
	if len(commits) != 1 || commits[0].Split != "s" || commits[0].Progress.Watermark != 20 || commits[0].Progress.Completed {
		t.Fatalf("commits = %+v, want s at 20 without the cut, not completed", commits)
	}
	if got := h.script.Released(); !slices.Equal(got, []coordination.SplitID{"s"}) {
		t.Fatalf("Released = %v, want [s]", got)
	}
	if a := h.mustLog(slog.LevelWarn, "cut refused; the lane stopped at the cut, so the split is handed back un-cut and its next tenancy reads the rest of its range; it is not cut again"); a["split"] != "s" || !strings.Contains(a["err"], "byte-equal") {
		t.Fatalf("refusal logged with %v, want the split and the coordinator's reason", a)
	}
	h.expect(driver.LanesRetired{Lanes: []driver.LaneID{lane.ID}})
	// Its next tenancy reads on; it is neither reported nor cut again.
	again := h.open("s", 4, progress(20))
	src.remaining[again.ID] = 80
	h.d.ReportRemaining()
	if e, ok := h.script.Remaining("s"); ok {
		t.Fatalf("estimate %+v reported for a split whose cut was refused", e)
	}
	h.requestCut("s", 4, 0.5)
	if n, err := h.d.Cut([]driver.Watermark{{Partition: again.Partition, Value: 30}}); n != 0 || err != nil || len(src.asked) != 1 {
		t.Fatalf("Cut = %d, %v with %d TrySplit calls; want the request ignored", n, err, len(src.asked))
	}
	if h.countLogged("cut refused; the lane stopped at the cut, so the split is handed back un-cut and its next tenancy reads the rest of its range; it is not cut again") != 1 {
		t.Fatal("the refusal was logged more than once")
	}
}

// TestAPollThatBringsACutRequestDoesNotPark: a poll whose batch carries a
// cut request returns at once, so the caller cuts when the request arrives
// (it used to park for the rest of the commit interval: about 700 ms
// between the request and TrySplit); the next poll parks as before.
func TestAPollThatBringsACutRequestDoesNotPark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newSplitHarness(t)
		h.open("s", 1, progress(1))
		h.script.RequestCut("s", 1, 0.5, 1)
		<-h.d.Waker().C() // the wake that delivered the request ended an earlier park
		start := time.Now()
		if ev, err := h.d.PollEvents(time.Hour); err != nil || ev != (driver.Idle{}) {
			t.Fatalf("PollEvents = %#v, %v; want Idle", ev, err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("the poll that brought a cut request parked %v", waited)
		}
		if ev, err := h.d.PollEvents(time.Minute); err != nil || ev != (driver.Idle{}) || time.Since(start) != time.Minute {
			t.Fatalf("next PollEvents = %#v, %v after %v; want Idle after a full park", ev, err, time.Since(start))
		}
	})
}
