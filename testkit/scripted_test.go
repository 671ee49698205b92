package testkit_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/testkit"
)

type stubPlanner struct{ fp string }

func (p stubPlanner) Fingerprint() string { return p.fp }
func (p stubPlanner) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	return coordination.SplitPlan{Finality: coordination.PlanFinal}, nil
}

// started returns a scripted pair whose coordinator has been started.
func started(t testing.TB) (*testkit.ScriptedCoordinator, *testkit.CoordinatorScript) {
	t.Helper()
	c, s := testkit.NewScripted()
	if err := c.Start(stubPlanner{fp: "fp"}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return c, s
}

// wantErr checks that err is a *coordination.Error of kind with reason.
func wantErr(t testing.TB, err error, kind coordination.ErrorKind, reason string) {
	t.Helper()
	var ce *coordination.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *coordination.Error", err)
	}
	if ce.Kind != kind || ce.Reason != reason {
		t.Fatalf("error = (%v, %q), want (%v, %q)", ce.Kind, ce.Reason, kind, reason)
	}
}

func woken(w *coordination.Waker) bool {
	select {
	case <-w.C():
		return true
	default:
		return false
	}
}

func spec(id string) coordination.SplitSpec {
	return coordination.SplitSpec{ID: coordination.SplitID(id), Descriptor: []byte(id), Weight: 1}
}

func TestScriptedPollReturnsOneBatchInQueueOrder(t *testing.T) {
	c, s := started(t)
	p := &coordination.SplitProgress{Watermark: 7, State: []byte("x")}
	s.Gain(spec("a"), 3, p)
	s.Revoke("a")
	s.Lose("a")
	s.Quarantine("b", 4)
	s.Stalled(1, 2)
	s.AllComplete()
	got, err := c.Poll()
	if err != nil {
		t.Fatalf("Poll: %v", err)
	}
	want := []coordination.Event{
		coordination.Gained{Split: spec("a"), Epoch: 3, Progress: &coordination.SplitProgress{Watermark: 7, State: []byte("x")}},
		coordination.RevokeRequested{Split: "a"},
		coordination.Lost{Split: "a"},
		coordination.Quarantined{Split: "b", Attempts: 4},
		coordination.Stalled{Completed: 1, Quarantined: 2},
		coordination.AllComplete{},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Poll = %#v, want %#v", got, want)
	}
	if got, err := c.Poll(); got != nil || err != nil {
		t.Fatalf("second Poll = (%v, %v), want (nil, nil)", got, err)
	}
	s.Lose("c")
	if got, _ := c.Poll(); !reflect.DeepEqual(got, []coordination.Event{coordination.Lost{Split: "c"}}) {
		t.Fatalf("third Poll = %v, want only the event queued since the second", got)
	}
}

func TestScriptedGainCopiesItsInputs(t *testing.T) {
	c, s := started(t)
	sp := spec("a")
	p := &coordination.SplitProgress{Watermark: 1, State: []byte("s")}
	s.Gain(sp, 1, p)
	sp.Descriptor[0] = 'X'
	p.State[0] = 'X'
	p.Watermark = 99
	got, _ := c.Poll()
	g := got[0].(coordination.Gained)
	if string(g.Split.Descriptor) != "a" || string(g.Progress.State) != "s" || g.Progress.Watermark != 1 {
		t.Fatalf("Gained = %+v (progress %+v); the script must copy its inputs", g, *g.Progress)
	}
}

func TestScriptedEveryQueueingCallWakes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		queue func(s *testkit.CoordinatorScript)
	}{
		{"Gain", func(s *testkit.CoordinatorScript) { s.Gain(spec("a"), 1, nil) }},
		{"Lose", func(s *testkit.CoordinatorScript) { s.Lose("a") }},
		{"Revoke", func(s *testkit.CoordinatorScript) { s.Revoke("a") }},
		{"Quarantine", func(s *testkit.CoordinatorScript) { s.Quarantine("a", 1) }},
		{"AllComplete", func(s *testkit.CoordinatorScript) { s.AllComplete() }},
		{"Stalled", func(s *testkit.CoordinatorScript) { s.Stalled(0, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s := testkit.NewScripted()
			w := coordination.NewWaker()
			c.SetWaker(w)
			if err := c.Start(stubPlanner{fp: "fp"}); err != nil {
				t.Fatal(err)
			}
			if woken(w) {
				t.Fatal("woken before anything was queued")
			}
			tc.queue(s)
			if !woken(w) {
				t.Fatalf("%s did not wake the waker", tc.name)
			}
			if got, _ := c.Poll(); len(got) != 1 {
				t.Fatalf("Poll returned %d events, want 1", len(got))
			}
		})
	}
}

func TestScriptedQueueingWithoutWakerStillQueues(t *testing.T) {
	c, s := started(t)
	s.Lose("a")
	if got, _ := c.Poll(); len(got) != 1 {
		t.Fatalf("Poll = %v, want the queued event", got)
	}
}

func TestScriptedSetWakerAfterStartIsIgnored(t *testing.T) {
	c, s := started(t)
	w := coordination.NewWaker()
	c.SetWaker(w)
	s.Lose("a")
	if woken(w) {
		t.Fatal("a waker set after Start was woken; it must be ignored as on a real coordinator")
	}
}

func TestScriptedCommitOutcomesArePerSplitFIFO(t *testing.T) {
	c, s := started(t)
	s.FailNextCommit("a", coordination.Retryable)
	s.FailNextCommit("a", coordination.Fenced)
	s.FailNextCommit("b", coordination.Fatal)

	p := func(w int64) coordination.SplitProgress { return coordination.SplitProgress{Watermark: w} }
	wantErr(t, c.Commit("b", p(1)), coordination.Fatal, "scripted fatal for split b")
	wantErr(t, c.Commit("a", p(1)), coordination.Retryable, "scripted retryable for split a")
	if err := c.Commit("b", p(2)); err != nil {
		t.Fatalf("b's queue is empty, Commit = %v, want nil", err)
	}
	wantErr(t, c.Commit("a", p(2)), coordination.Fenced, "scripted fenced for split a")
	if err := c.Commit("a", p(3)); err != nil {
		t.Fatalf("a's queue is empty, Commit = %v, want nil", err)
	}
	want := []coordination.Commit{{Split: "b", Progress: p(2)}, {Split: "a", Progress: p(3)}}
	if got := s.Commits(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Commits = %v, want only the successful ones %v", got, want)
	}
	s.FailNextCommit("z", coordination.Fenced)
	if err := c.Commit("z", p(1)); !errors.Is(err, coordination.ErrFenced) {
		t.Fatalf("scripted error %v does not match its kind's sentinel", err)
	}
}

func TestScriptedCommitFinalPopsCommitOutcomesPerEntry(t *testing.T) {
	c, s := started(t)
	s.FailNextCommit("a", coordination.Retryable)
	s.FailNextCommit("a", coordination.Fatal)
	p := func(w int64) coordination.SplitProgress { return coordination.SplitProgress{Watermark: w} }
	errs := c.CommitFinal([]coordination.Commit{
		{Split: "a", Progress: p(1)},
		{Split: "b", Progress: p(2)},
		{Split: "a", Progress: p(3)},
		{Split: "a", Progress: p(4)},
	})
	if len(errs) != 4 {
		t.Fatalf("CommitFinal returned %d results, want 4", len(errs))
	}
	wantErr(t, errs[0], coordination.Retryable, "scripted retryable for split a")
	if errs[1] != nil {
		t.Fatalf("entry 1 = %v, want nil", errs[1])
	}
	wantErr(t, errs[2], coordination.Fatal, "scripted fatal for split a")
	if errs[3] != nil {
		t.Fatalf("entry 3 = %v, want nil", errs[3])
	}

	s.FailNextCommit("c", coordination.Fenced)
	errs = c.CommitFinal([]coordination.Commit{{Split: "c", Progress: p(5)}})
	wantErr(t, errs[0], coordination.Fenced, "scripted fenced for split c")

	want := [][]coordination.Commit{
		{{Split: "b", Progress: p(2)}, {Split: "a", Progress: p(4)}},
		{},
	}
	if got := s.FinalCommits(); !reflect.DeepEqual(got, want) {
		t.Fatalf("FinalCommits = %v, want %v", got, want)
	}
	if got := s.Commits(); len(got) != 0 {
		t.Fatalf("Commits = %v; final entries must never appear there", got)
	}
}

func TestScriptedFailRecordsEveryCallWithOutcomes(t *testing.T) {
	c, s := started(t)
	s.FailNextFail("a", coordination.Fenced)
	s.FailNextFail("a", coordination.Retryable)
	wantErr(t, c.Fail("a", 3, "bad row"), coordination.Fenced, "scripted fenced for split a")
	if err := c.Fail("b", 1, "other"); err != nil {
		t.Fatalf("unscripted Fail = %v, want nil", err)
	}
	wantErr(t, c.Fail("a", 4, "again"), coordination.Retryable, "scripted retryable for split a")
	if err := c.Fail("a", 5, "third"); err != nil {
		t.Fatalf("Fail after the queue emptied = %v, want nil", err)
	}
	// Fail outcomes and commit outcomes are separate queues.
	if err := c.Commit("a", coordination.SplitProgress{}); err != nil {
		t.Fatalf("Commit = %v; a fail outcome must not affect commits", err)
	}
	want := []testkit.FailRecord{
		{Split: "a", Epoch: 3, Reason: "bad row"},
		{Split: "b", Epoch: 1, Reason: "other"},
		{Split: "a", Epoch: 4, Reason: "again"},
		{Split: "a", Epoch: 5, Reason: "third"},
	}
	if got := s.Failed(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Failed = %v, want %v", got, want)
	}
}

func TestScriptedReleasesAreRecordedSeparately(t *testing.T) {
	c, s := started(t)
	for _, err := range []error{
		c.Release("a", "b"),
		c.ReleaseDrained("c"),
		c.DeclineRevoke("d"),
		c.Release("e"),
		c.ReleaseDrained("f", "g"),
		c.DeclineRevoke("h"),
	} {
		if err != nil {
			t.Fatalf("call failed: %v", err)
		}
	}
	ids := func(s ...coordination.SplitID) []coordination.SplitID { return s }
	if got := s.Released(); !reflect.DeepEqual(got, ids("a", "b", "e")) {
		t.Fatalf("Released = %v", got)
	}
	if got := s.ReleasedDrained(); !reflect.DeepEqual(got, ids("c", "f", "g")) {
		t.Fatalf("ReleasedDrained = %v", got)
	}
	if got := s.Declined(); !reflect.DeepEqual(got, ids("d", "h")) {
		t.Fatalf("Declined = %v", got)
	}
}

func TestScriptedTracksNoOwnership(t *testing.T) {
	c, s := started(t)
	// Never gained, and a regressing watermark: both succeed.
	for _, w := range []int64{10, 5} {
		if err := c.Commit("never-gained", coordination.SplitProgress{Watermark: w}); err != nil {
			t.Fatalf("Commit = %v, want nil", err)
		}
	}
	if err := c.Fail("never-gained", 9, "x"); err != nil {
		t.Fatalf("Fail = %v, want nil", err)
	}
	if got := len(s.Commits()); got != 2 {
		t.Fatalf("recorded %d commits, want 2", got)
	}
}

func TestScriptedStartRecordsPlannerAndRefusesASecondStart(t *testing.T) {
	c, s := testkit.NewScripted()
	if s.Started() {
		t.Fatal("Started before Start")
	}
	if p := s.TakePlanner(); p != nil {
		t.Fatalf("TakePlanner before Start = %v, want nil", p)
	}
	p := stubPlanner{fp: "one"}
	if err := c.Start(p); err != nil {
		t.Fatalf("Start = %v", err)
	}
	if !s.Started() {
		t.Fatal("Started = false after Start")
	}
	wantErr(t, c.Start(stubPlanner{fp: "two"}), coordination.Fatal, "Start called twice")
	if got := s.TakePlanner(); got != p {
		t.Fatalf("TakePlanner = %v, want the first Start's planner %v", got, p)
	}
	if got := s.TakePlanner(); got != nil {
		t.Fatalf("second TakePlanner = %v, want nil", got)
	}
}

func TestScriptedMisuseBeforeStart(t *testing.T) {
	c, s := testkit.NewScripted()
	s.Lose("a")
	s.FailNextCommit("a", coordination.Fenced)
	s.FailNextFail("a", coordination.Fenced)
	const used = "coordinator used before Start"

	got, err := c.Poll()
	wantErr(t, err, coordination.Fatal, "Poll called before Start")
	if got != nil {
		t.Fatalf("Poll before Start returned events %v", got)
	}
	wantErr(t, c.Commit("a", coordination.SplitProgress{}), coordination.Fatal, used)
	wantErr(t, c.Fail("a", 1, "x"), coordination.Fatal, used)
	wantErr(t, c.Release("a"), coordination.Fatal, used)
	wantErr(t, c.ReleaseDrained("a"), coordination.Fatal, used)
	wantErr(t, c.DeclineRevoke("a"), coordination.Fatal, used)
	errs := c.CommitFinal([]coordination.Commit{{Split: "a"}, {Split: "b"}})
	if len(errs) != 2 {
		t.Fatalf("CommitFinal returned %d results, want 2", len(errs))
	}
	for _, err := range errs {
		wantErr(t, err, coordination.Fatal, used)
	}

	// None of them changed state: nothing recorded, no outcome popped, the
	// queued event still there.
	if len(s.Commits()) != 0 || len(s.FinalCommits()) != 0 || len(s.Failed()) != 0 ||
		len(s.Released()) != 0 || len(s.ReleasedDrained()) != 0 || len(s.Declined()) != 0 {
		t.Fatal("a call before Start was recorded")
	}
	if err := c.Start(stubPlanner{fp: "fp"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Poll(); !reflect.DeepEqual(got, []coordination.Event{coordination.Lost{Split: "a"}}) {
		t.Fatalf("Poll after Start = %v, want the event queued before Start", got)
	}
	wantErr(t, c.Commit("a", coordination.SplitProgress{}), coordination.Fenced, "scripted fenced for split a")
	wantErr(t, c.Fail("a", 1, "x"), coordination.Fenced, "scripted fenced for split a")
}

func TestScriptedDepartBeforeStart(t *testing.T) {
	c, s := testkit.NewScripted()
	if err := c.Depart(); err != nil {
		t.Fatalf("Depart before Start = %v, want nil", err)
	}
	if !s.Departed() || s.Started() {
		t.Fatalf("Departed = %v, Started = %v; want true, false", s.Departed(), s.Started())
	}
	wantErr(t, c.Start(stubPlanner{fp: "fp"}), coordination.Fatal, "coordinator departed")
}

func TestScriptedAfterDepart(t *testing.T) {
	c, s := started(t)
	w := coordination.NewWaker()
	s.Lose("queued-before-depart")
	if err := c.Depart("b", "a"); err != nil {
		t.Fatalf("Depart = %v", err)
	}
	if !s.Departed() {
		t.Fatal("Departed = false")
	}
	if got := s.DepartedWith(); !reflect.DeepEqual(got, []coordination.SplitID{"b", "a"}) {
		t.Fatalf("DepartedWith = %v, want the ids as given", got)
	}
	const departed = "coordinator departed"
	s.Lose("queued-after-depart")
	if got, err := c.Poll(); got != nil || err != nil {
		t.Fatalf("Poll after Depart = (%v, %v), want (nil, nil)", got, err)
	}
	wantErr(t, c.Start(stubPlanner{fp: "fp"}), coordination.Fatal, departed)
	wantErr(t, c.Commit("a", coordination.SplitProgress{}), coordination.Fatal, departed)
	wantErr(t, c.Fail("a", 1, "x"), coordination.Fatal, departed)
	wantErr(t, c.Release("a"), coordination.Fatal, departed)
	wantErr(t, c.ReleaseDrained("a"), coordination.Fatal, departed)
	wantErr(t, c.DeclineRevoke("a"), coordination.Fatal, departed)
	wantErr(t, c.Depart("a"), coordination.Fatal, departed)
	errs := c.CommitFinal([]coordination.Commit{{Split: "a"}, {Split: "b"}, {Split: "c"}})
	if len(errs) != 3 {
		t.Fatalf("CommitFinal returned %d results, want 3", len(errs))
	}
	for _, err := range errs {
		wantErr(t, err, coordination.Fatal, departed)
	}
	c.SetWaker(w) // does nothing
	c.SetStop(make(chan struct{}))
	s.Lose("x")
	if woken(w) {
		t.Fatal("SetWaker after Depart took effect")
	}
	if got := s.DepartedWith(); !reflect.DeepEqual(got, []coordination.SplitID{"b", "a"}) {
		t.Fatalf("DepartedWith after a second Depart = %v, want the first call's ids", got)
	}
	if len(s.Commits()) != 0 || len(s.FinalCommits()) != 0 || len(s.Failed()) != 0 ||
		len(s.Released()) != 0 || len(s.ReleasedDrained()) != 0 || len(s.Declined()) != 0 {
		t.Fatal("a call after Depart was recorded")
	}
}

func TestScriptedSetStopHasNoEffect(t *testing.T) {
	c, s := started(t)
	stop := make(chan struct{})
	c.SetStop(stop)
	close(stop)
	if err := c.Commit("a", coordination.SplitProgress{Watermark: 1}); err != nil {
		t.Fatalf("Commit after the stop closed = %v, want nil", err)
	}
	if err := c.Release("a"); err != nil {
		t.Fatalf("Release after the stop closed = %v, want nil", err)
	}
	if len(s.Commits()) != 1 {
		t.Fatal("commit not recorded")
	}
}

func TestScriptedRecordsAreCopies(t *testing.T) {
	c, s := started(t)
	if err := c.Commit("a", coordination.SplitProgress{Watermark: 1, State: []byte("s")}); err != nil {
		t.Fatal(err)
	}
	if err := c.Release("a"); err != nil {
		t.Fatal(err)
	}
	s.Commits()[0].Progress.State[0] = 'X'
	s.Released()[0] = "X"
	if got := s.Commits()[0].Progress.State; string(got) != "s" {
		t.Fatalf("Commits exposed internal state: %q", got)
	}
	if got := s.Released()[0]; got != "a" {
		t.Fatalf("Released exposed internal state: %q", got)
	}
}

func TestScriptedIsSafeAcrossGoroutines(t *testing.T) {
	c, s := testkit.NewScripted()
	w := coordination.NewWaker()
	c.SetWaker(w)
	if err := c.Start(stubPlanner{fp: "fp"}); err != nil {
		t.Fatal(err)
	}
	const n = 200
	var wg sync.WaitGroup
	wg.Go(func() {
		for range n {
			s.Lose("a")
		}
	})
	wg.Go(func() {
		for range n {
			_ = c.Commit("b", coordination.SplitProgress{})
			_ = s.Commits()
		}
	})
	seen := 0
	for seen < n {
		<-w.C() // every Lose wakes; wakes collapse, so drain all that is queued
		got, err := c.Poll()
		if err != nil {
			t.Fatal(err)
		}
		seen += len(got)
	}
	wg.Wait()
	if seen != n {
		t.Fatalf("saw %d events, want %d", seen, n)
	}
	if got := len(s.Commits()); got != n {
		t.Fatalf("recorded %d commits, want %d", got, n)
	}
}
