package driver_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/testkit"
)

// runSource is a Source and a Reader whose rows the test acknowledges by
// hand (ack); it records the Reader calls, in order, as strings. It is safe
// for concurrent use: Run calls it from its goroutine, the test from its own.
type runSource struct {
	driver.SourceDefaults

	mu       sync.Mutex
	rows     map[coordination.SplitID]int64 // rows per split, from the descriptor
	lanes    map[coordination.SplitID]driver.Lane
	acked    map[driver.PartitionID]int64
	calls    []string
	openErrs []error // popped per OpenSplit
}

func newRunSource() *runSource {
	return &runSource{
		rows:  map[coordination.SplitID]int64{},
		lanes: map[coordination.SplitID]driver.Lane{},
		acked: map[driver.PartitionID]int64{},
	}
}

func (s *runSource) OpenSplit(o driver.Opening) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.openErrs) > 0 {
		err := s.openErrs[0]
		s.openErrs = s.openErrs[1:]
		return err
	}
	var rows int64
	if _, err := fmt.Sscan(string(o.Split.Descriptor), &rows); err != nil {
		return err
	}
	s.rows[o.Split.ID] = rows
	if o.Resume != nil {
		s.acked[o.Partition] = o.Resume.Watermark
	}
	return nil
}

func (s *runSource) EncodeCommit(split coordination.SplitID, w int64) (coordination.SplitProgress, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return coordination.SplitProgress{Watermark: w, Completed: w == s.rows[split]}, nil
}

func (s *runSource) Sweep(coordination.SplitID) (*coordination.SplitProgress, error) { return nil, nil }

func (s *runSource) CloseSplit(split coordination.SplitID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rows, split)
}

func (s *runSource) StartLanes(lanes []driver.Lane) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range lanes {
		s.lanes[l.Split.ID] = l
		s.calls = append(s.calls, fmt.Sprintf("start %s lane %d", l.Split.ID, l.ID))
	}
}

func (s *runSource) StopLanes(lanes []driver.LaneID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, fmt.Sprintf("stop %v", lanes))
}

func (s *runSource) Acked() []driver.Watermark {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ws []driver.Watermark
	for p, v := range s.acked {
		ws = append(ws, driver.Watermark{Partition: p, Value: v})
	}
	slices.SortFunc(ws, func(a, b driver.Watermark) int { return cmp.Compare(a.Partition, b.Partition) })
	return ws
}

// ack acknowledges split's rows up to watermark on its started lane.
func (s *runSource) ack(t testing.TB, split coordination.SplitID, watermark int64) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.lanes[split]
	if !ok {
		t.Fatalf("ack %s: no lane was started for it", split)
	}
	s.acked[l.Partition] = watermark
}

// lane returns split's started lane.
func (s *runSource) lane(t testing.TB, split coordination.SplitID) driver.Lane {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.lanes[split]
	if !ok {
		t.Fatalf("no lane was started for %s", split)
	}
	return l
}

func (s *runSource) recorded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// rowSpec is a split of rows rows.
func rowSpec(id string, rows int) coordination.SplitSpec {
	return coordination.SplitSpec{ID: coordination.SplitID(id), Descriptor: []byte(fmt.Sprint(rows)), Weight: 1}
}

const testInterval = time.Second

// runHarness runs driver.Run in a goroutine of the current bubble.
type runHarness struct {
	c      *testkit.ScriptedCoordinator
	script *testkit.CoordinatorScript
	src    *runSource
	cancel context.CancelFunc
	done   chan error // receives Run's result once
}

// startRun starts Run over a scripted coordinator inside a synctest bubble
// and waits until it parks.
func startRun(t *testing.T, opts ...driver.Option) *runHarness {
	t.Helper()
	c, script := testkit.NewScripted()
	ctx, cancel := context.WithCancel(t.Context())
	h := &runHarness{c: c, script: script, src: newRunSource(), cancel: cancel, done: make(chan error, 1)}
	opts = append([]driver.Option{driver.WithPlanner(planner{}), driver.WithCommitInterval(testInterval)}, opts...)
	go func() { h.done <- driver.Run(ctx, c, h.src, opts...) }()
	synctest.Wait()
	if !script.Started() {
		t.Fatal("Run did not start the coordinator")
	}
	return h
}

// result waits for Run to return and checks that it departed.
func (h *runHarness) result(t *testing.T) error {
	t.Helper()
	synctest.Wait()
	select {
	case err := <-h.done:
		if !h.script.Departed() {
			t.Error("Run returned without departing the job")
		}
		return err
	default:
		t.Fatal("Run is still running")
		return nil
	}
}

// running fails the test if Run has returned.
func (h *runHarness) running(t *testing.T) {
	t.Helper()
	synctest.Wait()
	select {
	case err := <-h.done:
		t.Fatalf("Run returned %v early", err)
	default:
	}
}

func TestRunCommitsEveryIntervalAndEndsNilOnAllComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startRun(t)
		h.script.Gain(rowSpec("s1", 10), 1, nil)
		synctest.Wait()
		lane := h.src.lane(t, "s1")

		h.src.ack(t, "s1", 4)
		time.Sleep(testInterval) // the bubble's clock: one commit interval
		synctest.Wait()
		if got, want := h.script.Commits(), []coordination.Commit{{Split: "s1", Progress: coordination.SplitProgress{Watermark: 4}}}; !commitsEqual(got, want) {
			t.Fatalf("commits after one interval = %v, want %v", got, want)
		}
		time.Sleep(testInterval) // nothing advanced: nothing is committed
		synctest.Wait()
		if got := len(h.script.Commits()); got != 1 {
			t.Fatalf("commits after an interval without progress = %d, want still 1", got)
		}

		h.src.ack(t, "s1", 10)
		time.Sleep(testInterval)
		synctest.Wait()
		commits := h.script.Commits()
		if last := commits[len(commits)-1]; last.Progress.Watermark != 10 || !last.Progress.Completed {
			t.Fatalf("last commit = %v, want s1 at 10, completed", last)
		}
		h.running(t)
		h.script.AllComplete()
		if err := h.result(t); err != nil {
			t.Fatalf("Run = %v, want nil after AllComplete", err)
		}
		want := []string{fmt.Sprintf("start s1 lane %d", lane.ID), fmt.Sprintf("stop [%d]", lane.ID)}
		if got := h.src.recorded(); !slices.Equal(got, want) {
			t.Fatalf("reader calls = %q, want %q (a retired lane is stopped once)", got, want)
		}
	})
}

func TestRunInterruptedStopsLanesCommitsFinalAndWrapsCtxErr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startRun(t)
		h.script.Gain(rowSpec("s1", 10), 1, nil)
		synctest.Wait()
		lane := h.src.lane(t, "s1")
		h.src.ack(t, "s1", 7)
		h.cancel()
		err := h.result(t)
		if !errors.Is(err, context.Canceled) || coordination.KindOf(err) != coordination.Retryable {
			t.Fatalf("Run = %v, want a Retryable error wrapping context.Canceled", err)
		}
		if !strings.Contains(err.Error(), "run again to resume") {
			t.Errorf("Run's error %q does not say how to resume", err)
		}
		final := h.script.FinalCommits()
		if len(final) != 1 || !commitsEqual(final[0], []coordination.Commit{{Split: "s1", Progress: coordination.SplitProgress{Watermark: 7}}}) {
			t.Fatalf("final commits = %v, want one batch with s1 at 7", final)
		}
		if got, want := h.src.recorded(), fmt.Sprintf("stop [%d]", lane.ID); len(got) != 2 || got[1] != want {
			t.Fatalf("reader calls = %q, want the lane stopped (%q) before the final commit", got, want)
		}
	})
}

func TestRunStalledReturnsStalledError(t *testing.T) {
	for _, opts := range [][]driver.Option{nil, {driver.WithDrainOnStall()}} {
		t.Run(fmt.Sprintf("options=%d", len(opts)), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startRun(t, opts...)
				h.script.Stalled(3, 1)
				err := h.result(t)
				stalled, ok := errors.AsType[*driver.StalledError](err)
				if !ok || stalled.Completed != 3 || stalled.Quarantined != 1 {
					t.Fatalf("Run = %v, want *StalledError{3, 1}", err)
				}
				if !errors.Is(err, coordination.ErrFatal) {
					t.Errorf("Run = %v, want it to match ErrFatal", err)
				}
				if want := "3 splits completed, 1 quarantined"; !strings.Contains(err.Error(), want) {
					t.Errorf("Run = %q, want it to contain %q", err, want)
				}
			})
		})
	}
}

func TestRunFatalCommitEndsTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startRun(t)
		h.script.Gain(rowSpec("s1", 10), 1, nil)
		synctest.Wait()
		lane := h.src.lane(t, "s1")
		h.script.FailNextCommit("s1", coordination.Fatal)
		h.src.ack(t, "s1", 3)
		time.Sleep(testInterval)
		err := h.result(t)
		if coordination.KindOf(err) != coordination.Fatal {
			t.Fatalf("Run = %v, want the Fatal commit error", err)
		}
		if got, want := h.src.recorded(), fmt.Sprintf("stop [%d]", lane.ID); !slices.Contains(got, want) {
			t.Fatalf("reader calls = %q, want %q before Shutdown", got, want)
		}
	})
}

func TestRunRetryableCommitIsRetriedAtTheNextInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startRun(t)
		h.script.Gain(rowSpec("s1", 10), 1, nil)
		synctest.Wait()
		h.script.FailNextCommit("s1", coordination.Retryable)
		h.src.ack(t, "s1", 5)
		time.Sleep(testInterval)
		synctest.Wait()
		if got := h.script.Commits(); len(got) != 0 {
			t.Fatalf("commits = %v, want none landed yet", got)
		}
		time.Sleep(testInterval) // the same watermark again: deferred is not durable
		synctest.Wait()
		if got, want := h.script.Commits(), []coordination.Commit{{Split: "s1", Progress: coordination.SplitProgress{Watermark: 5}}}; !commitsEqual(got, want) {
			t.Fatalf("commits = %v, want %v re-sent", got, want)
		}
		h.running(t)
		h.cancel()
		_ = h.result(t)
	})
}

func TestRunStopsRevokedLanes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startRun(t)
		h.script.Gain(rowSpec("s1", 10), 1, nil)
		synctest.Wait()
		lane := h.src.lane(t, "s1")
		h.script.Lose("s1")
		synctest.Wait()
		if got, want := h.src.recorded(), fmt.Sprintf("stop [%d]", lane.ID); !slices.Contains(got, want) {
			t.Fatalf("reader calls = %q, want %q after the loss", got, want)
		}
		h.src.ack(t, "s1", 9) // a late ack of the lost lane commits nothing
		time.Sleep(testInterval)
		h.running(t)
		if got := h.script.Commits(); len(got) != 0 {
			t.Fatalf("commits = %v, want none for a lost lane", got)
		}
		h.cancel()
		_ = h.result(t)
	})
}

func TestRunRetriesARetryableOpenError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, script := testkit.NewScripted()
		src := newRunSource()
		src.openErrs = []error{&coordination.Error{Kind: coordination.Retryable, Reason: "not yet"}}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			done <- driver.Run(ctx, c, src, driver.WithPlanner(planner{}), driver.WithCommitInterval(testInterval))
		}()
		script.Gain(rowSpec("s1", 10), 1, nil)
		time.Sleep(time.Second)
		synctest.Wait()
		src.lane(t, "s1") // opened and started on the second attempt
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want interrupted", err)
		}
	})
}

func TestRunStartFailureDeparts(t *testing.T) {
	c, script := testkit.NewScripted()
	if err := c.Start(planner{}); err != nil {
		t.Fatal(err)
	}
	err := driver.Run(t.Context(), c, newRunSource(), driver.WithPlanner(planner{}))
	if coordination.KindOf(err) != coordination.Fatal || !script.Departed() {
		t.Fatalf("Run = %v, departed %v; want Start's Fatal error and a Depart", err, script.Departed())
	}
}

func TestRunCancelledBeforeStartDepartsWithoutStarting(t *testing.T) {
	c, script := testkit.NewScripted()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := driver.Run(ctx, c, newRunSource(), driver.WithPlanner(planner{}))
	if !errors.Is(err, context.Canceled) || script.Started() || !script.Departed() {
		t.Fatalf("Run = %v, started %v, departed %v; want interrupted, not started, departed", err, script.Started(), script.Departed())
	}
}

func TestRunRejectsBadInputBeforeTouchingTheCoordinator(t *testing.T) {
	tests := []struct {
		name string
		opts []driver.Option
		want string
	}{
		{"no planner", nil, "pass driver.WithPlanner(p)"},
		{"negative interval", []driver.Option{driver.WithPlanner(planner{}), driver.WithCommitInterval(-time.Second)}, "driver.WithCommitInterval -1s must be positive"},
		{"negative pause window", []driver.Option{driver.WithPlanner(planner{}), driver.WithPauseAfter(-time.Second)}, "driver.WithPauseAfter -1s must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, script := testkit.NewScripted()
			err := driver.Run(t.Context(), c, newRunSource(), tt.opts...)
			if coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run = %v, want Fatal containing %q", err, tt.want)
			}
			if script.Started() || script.Departed() {
				t.Fatal("Run touched the coordinator despite bad input")
			}
		})
	}
}

// commitsEqual compares commits by split, watermark and completion.
func commitsEqual(a, b []coordination.Commit) bool {
	return slices.EqualFunc(a, b, func(x, y coordination.Commit) bool {
		return x.Split == y.Split && x.Progress.Watermark == y.Progress.Watermark && x.Progress.Completed == y.Progress.Completed
	})
}
