package driver_test

import (
	"errors"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
)

func TestPollEventsOrderLossesRetirementsLanesTerminal(t *testing.T) {
	h := newHarness(t)
	la := h.open("a", 1, nil)
	lb := h.open("b", 1, nil)
	// One batch: a is lost, c is gained, the job completes; b's sweep
	// finds it complete. Each call returns one event, in rule order.
	h.src.sweep["b"] = completed(9)
	h.script.Lose("a")
	h.script.Gain(spec("c"), 1, nil)
	h.script.AllComplete()
	h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{la.ID}})
	h.expect(driver.LanesRetired{Lanes: []driver.LaneID{lb.ID}})
	ev := h.poll()
	if added, ok := ev.(driver.LanesAdded); !ok || len(added.Lanes) != 1 || added.Lanes[0].Split.ID != "c" {
		t.Fatalf("third event = %#v, want LanesAdded for c", ev)
	}
	h.expect(driver.Drained{})
}

func TestLossAndRegainInOneBatchYieldsRevokedBeforeAdded(t *testing.T) {
	h := newHarness(t)
	old := h.open("a", 1, nil)
	h.script.Lose("a")
	h.script.Gain(spec("a"), 2, progress(5))
	h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{old.ID}})
	ev := h.poll()
	added, ok := ev.(driver.LanesAdded)
	if !ok || len(added.Lanes) != 1 {
		t.Fatalf("second event = %#v, want LanesAdded", ev)
	}
	n := added.Lanes[0]
	if n.Split.ID != "a" || n.Epoch != 2 || n.ID == old.ID || n.Partition == old.Partition {
		t.Fatalf("re-gained lane = %+v; want epoch 2 with a fresh lane and partition (old %+v)", n, old)
	}
	if got := h.src.count("CloseSplit", "a"); got != 1 {
		t.Fatalf("CloseSplit(a) called %d times, want 1 (the old tenancy)", got)
	}
}

func TestGainedAndLostInOneBatchOpensNothing(t *testing.T) {
	h := newHarness(t)
	h.script.Gain(spec("a"), 1, nil)
	h.script.Lose("a")
	h.expect(driver.Idle{})
	if h.src.count("OpenSplit", "a") != 0 {
		t.Fatal("a tenancy lost before its open was opened")
	}
	if got := h.src.count("CloseSplit", "a"); got != 1 {
		t.Fatalf("CloseSplit(a) called %d times, want 1 even though no lane opened", got)
	}
}

func TestPollEventsLoopsWithoutParkingWhenSomethingIsStaged(t *testing.T) {
	h := newHarness(t)
	h.script.Gain(spec("a"), 1, nil)
	<-h.d.Waker().C() // consume the gain's wake: a park would now wait out the timeout
	start := time.Now()
	ev, err := h.d.PollEvents(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ev.(driver.LanesAdded); !ok {
		t.Fatalf("PollEvents = %#v, want LanesAdded in the same call", ev)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("PollEvents took %v; it parked although a gain was staged", d)
	}
}

func TestParkReturnsEarlyOnWakeFromAnotherGoroutine(t *testing.T) {
	h := newHarness(t)
	parking := make(chan struct{})
	h.src.beforeTakeFinishing = func() { // the last step before the park
		h.src.beforeTakeFinishing = nil
		close(parking)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-parking
		h.script.Gain(spec("a"), 1, nil) // wakes the driver's Waker
	}()
	ev, err := h.d.PollEvents(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ev.(driver.Idle); !ok {
		t.Fatalf("PollEvents = %#v, want Idle ending the park", ev)
	}
	<-done
	ev = h.poll()
	if _, ok := ev.(driver.LanesAdded); !ok {
		t.Fatalf("next PollEvents = %#v, want the woken gain as LanesAdded", ev)
	}
}

func TestParkReturnsEarlyOnDirectWake(t *testing.T) {
	h := newHarness(t)
	parking := make(chan struct{})
	h.src.beforeTakeFinishing = func() {
		h.src.beforeTakeFinishing = nil
		close(parking)
	}
	go func() {
		<-parking
		h.d.Waker().Wake() // as a lane does on end of input or poison
	}()
	if ev, err := h.d.PollEvents(time.Hour); err != nil || ev != (driver.Idle{}) {
		t.Fatalf("PollEvents = (%#v, %v), want Idle", ev, err)
	}
}

func TestPollEventsIdleAfterTimeoutOrWithoutOne(t *testing.T) {
	h := newHarness(t)
	h.expect(driver.Idle{})
	if ev, err := h.d.PollEvents(time.Millisecond); err != nil || ev != (driver.Idle{}) {
		t.Fatalf("PollEvents(1ms) = (%#v, %v), want Idle", ev, err)
	}
}

func TestCommitReadyMapsFinishingSplitsToHeldPartitions(t *testing.T) {
	h := newHarness(t)
	la := h.open("a", 1, nil)
	lb := h.open("b", 1, nil)
	h.src.finishing = ids("b", "unknown", "a", "b")
	h.expect(driver.CommitReady{Partitions: []driver.PartitionID{lb.Partition, la.Partition}})
	h.expect(driver.Idle{}) // an edge, not a level
}

func TestTerminalStateIsSticky(t *testing.T) {
	h := newHarness(t)
	h.script.AllComplete()
	h.expect(driver.Drained{})
	polls := h.c.pollCalls
	h.script.Gain(spec("late"), 1, nil)
	h.expect(driver.Drained{})
	h.expect(driver.Drained{})
	if h.c.pollCalls != polls || h.src.count("OpenSplit", "late") != 0 {
		t.Fatal("the driver kept polling the coordinator after the verdict")
	}
}

func TestPollErrorIsReturnedUnchanged(t *testing.T) {
	h := newHarness(t)
	latched := &coordination.Error{Kind: coordination.Fatal, Reason: "fingerprint mismatch"}
	h.c.pollErr = latched
	if err := h.pollErr(); err != latched {
		t.Fatalf("PollEvents = %v, want the Poll error unchanged", err)
	}
}

func TestEveryEventOfABatchIsAppliedEvenIfOneFails(t *testing.T) {
	h := newHarness(t)
	h.src.validateErr["a"] = errors.New("pinned version gone")
	h.script.FailNextFail("a", coordination.Fatal)
	h.script.Gain(spec("a"), 3, progress(4))
	h.script.Gain(spec("b"), 1, nil)
	wantErr(t, h.pollErr(), coordination.Fatal, "scripted fatal for split a")
	ev := h.poll()
	added, ok := ev.(driver.LanesAdded)
	if !ok || len(added.Lanes) != 1 || added.Lanes[0].Split.ID != "b" {
		t.Fatalf("next PollEvents = %#v, want b opened", ev)
	}
}

func TestFirstErrorOfABatchIsKeptUnlessALaterOneIsFatal(t *testing.T) {
	first, second := errors.New("first: fail not taken"), errors.New("second: fail not taken")
	t.Run("first kept", func(t *testing.T) {
		h := newHarness(t)
		h.c.failErrs = map[coordination.SplitID]error{"a": first, "b": second}
		h.src.validateErr["a"] = errors.New("rejected")
		h.src.validateErr["b"] = errors.New("rejected")
		h.script.Gain(spec("a"), 1, progress(1))
		h.script.Gain(spec("b"), 1, progress(1))
		if err := h.pollErr(); err != first {
			t.Fatalf("PollEvents = %v, want the first error", err)
		}
	})
	t.Run("later fatal replaces", func(t *testing.T) {
		h := newHarness(t)
		h.c.failErrs = map[coordination.SplitID]error{"a": first}
		h.src.validateErr["a"] = errors.New("rejected")
		h.src.validateErr["b"] = errors.New("rejected")
		h.script.FailNextFail("b", coordination.Fatal)
		h.script.Gain(spec("a"), 1, progress(1))
		h.script.Gain(spec("b"), 1, progress(1))
		wantErr(t, h.pollErr(), coordination.Fatal, "scripted fatal for split b")
	})
}

func TestDuplicateGainClosesTheOldTenancy(t *testing.T) {
	h := newHarness(t)
	old := h.open("a", 1, nil)
	h.script.Gain(spec("a"), 2, nil)
	h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{old.ID}})
	ev := h.poll()
	added, ok := ev.(driver.LanesAdded)
	if !ok || added.Lanes[0].Epoch != 2 || added.Lanes[0].Partition == old.Partition {
		t.Fatalf("PollEvents = %#v, want a fresh lane under epoch 2", ev)
	}
	attrs := h.mustLog(slog.LevelWarn, "duplicate gain for a held split; closing the old tenancy")
	if attrs["split"] != "a" {
		t.Fatalf("log attrs = %v, want split a", attrs)
	}
	if got := h.src.count("CloseSplit", "a"); got != 1 {
		t.Fatalf("CloseSplit(a) = %d calls, want 1", got)
	}
	// The old partition's watermarks are ignored; the new one commits.
	if err := h.d.Commit([]driver.Watermark{{Partition: old.Partition, Value: 3}, {Partition: added.Lanes[0].Partition, Value: 4}}); err != nil {
		t.Fatal(err)
	}
	if got := h.script.Commits(); !reflect.DeepEqual(got, []coordination.Commit{commit("a", progress(4))}) {
		t.Fatalf("Commits = %v, want only the new tenancy's", got)
	}
}

func TestGainedOpensAtTheValidatedResume(t *testing.T) {
	h := newHarness(t)
	h.open("fresh", 1, nil)
	if h.src.count("ValidateResume", "fresh") != 0 {
		t.Fatal("ValidateResume called for a gain without progress")
	}
	h.open("carried", 7, progress(40))
	if h.src.count("ValidateResume", "carried") != 1 {
		t.Fatal("ValidateResume not called for carried progress")
	}
	o := h.src.opens[1]
	if o.Resume == nil || !reflect.DeepEqual(*o.Resume, *progress(40)) || o.Epoch != 7 ||
		!reflect.DeepEqual(o.Split, spec("carried")) || o.Waker != h.d.Waker() || o.Lane == 0 || o.Partition == 0 {
		t.Fatalf("Opening = %+v, want the carried progress, epoch, spec, ids and the driver's waker", o)
	}
	if h.src.opens[0].Resume != nil {
		t.Fatal("a fresh split opened with a resume")
	}
}

// TestResumeRejectionFailsTheSplitAsPoison: a rejected resume is poison
// (Source.ValidateResume): the split is failed and never opened, the
// rejection logged, and the poll goes on: an error of the source here used
// to end driver.Run.
func TestResumeRejectionFailsTheSplitAsPoison(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome coordination.ErrorKind // 0: unscripted (nil)
	}{
		{"fail lands", 0},
		{"fail fenced", coordination.Fenced},
		{"fail retryable", coordination.Retryable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			rejected := errors.New("watermark 99 outside the split")
			h.src.validateErr["a"] = rejected
			if tc.outcome != 0 {
				h.script.FailNextFail("a", tc.outcome)
			}
			h.script.Gain(spec("a"), 5, progress(99))
			h.expect(driver.Idle{})
			if a := h.mustLog(slog.LevelWarn, "resume progress rejected; reporting the split as failed (poison)"); a["split"] != "a" || a["err"] != rejected.Error() {
				t.Fatalf("logged %v, want the split and the rejection", a)
			}
			want := []testkitFail{{"a", 5, "resume progress rejected: watermark 99 outside the split"}}
			if got := fails(h); !reflect.DeepEqual(got, want) {
				t.Fatalf("Fail calls = %v, want %v", got, want)
			}
			if h.src.count("OpenSplit", "a") != 0 || h.src.count("CloseSplit", "a") != 0 {
				t.Fatalf("source calls = %v; a rejected split is never opened nor closed", h.src.calls)
			}
			h.expect(driver.Idle{})
			if err := h.d.Fail("a", "again"); err != nil || len(h.script.Failed()) != 1 {
				t.Fatal("a rejected split must not be held")
			}
		})
	}
	t.Run("fail fatal replaces", func(t *testing.T) {
		h := newHarness(t)
		h.src.validateErr["a"] = errors.New("bad")
		h.script.FailNextFail("a", coordination.Fatal)
		h.script.Gain(spec("a"), 5, progress(99))
		wantErr(t, h.pollErr(), coordination.Fatal, "scripted fatal for split a")
	})
}

// testkitFail is a comparable view of testkit.FailRecord.
type testkitFail struct {
	split  coordination.SplitID
	epoch  coordination.LeaseEpoch
	reason string
}

func fails(h *harness) []testkitFail {
	var out []testkitFail
	for _, f := range h.script.Failed() {
		out = append(out, testkitFail{f.Split, f.Epoch, f.Reason})
	}
	return out
}

func TestLostRetiresAHeldSplitAndIgnoresOthers(t *testing.T) {
	h := newHarness(t)
	la := h.open("a", 1, nil)
	h.script.Lose("never-held")
	h.script.Lose("a")
	h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{la.ID}})
	h.expect(driver.Idle{})
	if h.src.count("CloseSplit", "never-held") != 0 {
		t.Fatal("Lost of an unheld split reached the source")
	}
	if err := h.d.Commit([]driver.Watermark{{Partition: la.Partition, Value: 5}}); err != nil || len(h.script.Commits()) != 0 {
		t.Fatalf("late watermark of a lost lane committed (err %v)", err)
	}
}

func TestQuarantinedWarnsAndRetires(t *testing.T) {
	h := newHarness(t)
	la := h.open("a", 1, nil)
	h.script.Quarantine("a", 4)
	h.script.Quarantine("other", 4)
	h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{la.ID}})
	attrs := h.mustLog(slog.LevelWarn, "split quarantined")
	if attrs["split"] != "a" || attrs["attempts"] != "4" {
		t.Fatalf("log attrs = %v, want split a, attempts 4", attrs)
	}
	if got := h.countLogged("split quarantined"); got != 2 {
		t.Fatalf("%d quarantine warnings, want one per event", got)
	}
}

func TestAllCompleteBeforeHoldingAnySplitLogsInfo(t *testing.T) {
	h := newHarness(t)
	h.script.AllComplete()
	h.expect(driver.Drained{})
	h.mustLog(slog.LevelInfo, "job completed before this worker held any split")

	h2 := newHarness(t)
	h2.open("a", 1, nil)
	h2.src.sweep["a"] = completed(1)
	h2.script.AllComplete()
	h2.poll() // LanesRetired
	h2.expect(driver.Drained{})
	if _, ok := h2.logged(slog.LevelInfo, "job completed before this worker held any split"); ok {
		t.Fatal("logged 'before this worker held any split' although it held one")
	}
}

const stallReason = "job stalled: 3 splits completed, 2 quarantined after exhausting their delivery attempts; see coordination_splits_quarantined, then requeue or drop the quarantined splits"

func TestStalledIsAFatalErrorNamingQuarantined(t *testing.T) {
	h := newHarness(t)
	h.script.Stalled(3, 2)
	for range 3 { // on every call
		err := h.pollErr()
		wantErr(t, err, coordination.Fatal, stallReason)
		if !errors.Is(err, coordination.ErrFatal) {
			t.Fatal("stall error is not Fatal")
		}
	}
}

func TestStalledWithDrainOnStallEndsAsDrained(t *testing.T) {
	h := newHarness(t, driver.WithDrainOnStall())
	h.script.Stalled(3, 2)
	for range 3 {
		h.expect(driver.Drained{})
	}
	attrs := h.mustLog(slog.LevelWarn, "job stalled; ending as drained (WithDrainOnStall)")
	if attrs["completed"] != "3" || attrs["quarantined"] != "2" {
		t.Fatalf("log attrs = %v, want completed 3, quarantined 2", attrs)
	}
	if got := h.countLogged("job stalled; ending as drained (WithDrainOnStall)"); got != 1 {
		t.Fatalf("warned %d times, want once", got)
	}
}

func TestRegainInTheBatchOfTheLossResumesFromThisWorkersLastCommit(t *testing.T) {
	// The coordinator ended the tenancy and re-claimed the split before the
	// driver polled the Lost; the old lane's commits landed on the new
	// tenancy after its Gained progress was taken.
	for _, tc := range []struct {
		name       string
		carried    *coordination.SplitProgress
		sameBatch  bool
		lastIsSoft bool // the last commit was Retryable (not durable)
		want       *coordination.SplitProgress
	}{
		{name: "carried behind", carried: nil, sameBatch: true, want: progress(8)},
		{name: "carried older", carried: progress(5), sameBatch: true, want: progress(8)},
		{name: "carried ahead", carried: progress(10), sameBatch: true, want: progress(10)},
		{name: "only durable commits count", carried: nil, sameBatch: true, lastIsSoft: true, want: progress(5)},
		{name: "loss polled earlier", carried: nil, sameBatch: false, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			la := h.open("a", 1, nil)
			if err := h.d.Commit([]driver.Watermark{wm(la.Partition, 5)}); err != nil {
				t.Fatal(err)
			}
			if tc.lastIsSoft {
				h.script.FailNextCommit("a", coordination.Retryable)
			}
			if err := h.d.Commit([]driver.Watermark{wm(la.Partition, 8)}); err != nil {
				t.Fatal(err)
			}
			h.script.Lose("a")
			if !tc.sameBatch {
				h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{la.ID}})
			}
			h.script.Gain(spec("a"), 2, tc.carried)
			if tc.sameBatch {
				h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{la.ID}})
			}
			if _, ok := h.poll().(driver.LanesAdded); !ok {
				t.Fatal("re-gained split not opened")
			}
			got := h.src.opens[len(h.src.opens)-1].Resume
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Opening.Resume = %+v, want %+v", got, tc.want)
			}
			_, warned := h.logged(slog.LevelWarn, "gained progress is behind this worker's last commit of the split; resuming from that commit")
			if bumped := tc.want != nil && (tc.carried == nil || tc.want.Watermark != tc.carried.Watermark); warned != bumped {
				t.Fatalf("catch-up warning logged = %v, want %v", warned, bumped)
			}
		})
	}
}

func TestDuplicateGainResumesFromTheOldTenancysLastCommit(t *testing.T) {
	h := newHarness(t)
	la := h.open("a", 1, nil)
	if err := h.d.Commit([]driver.Watermark{wm(la.Partition, 6)}); err != nil {
		t.Fatal(err)
	}
	h.script.Gain(spec("a"), 2, progress(3))
	h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{la.ID}})
	h.poll()
	if got := h.src.opens[len(h.src.opens)-1].Resume; !reflect.DeepEqual(got, progress(6)) {
		t.Fatalf("Opening.Resume = %+v, want the old tenancy's last commit", got)
	}
}
