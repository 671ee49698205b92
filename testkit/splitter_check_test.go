package testkit_test

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/testkit"
)

// countSource reads a split "a-b" (the records a..b-1) one record per
// step; overlap makes its cut hand the residual one record of the primary
// (a bug CheckSplitter must catch).
type countSource struct {
	driver.SourceDefaults
	overlap bool
	gate    chan struct{} // non-nil: the reader waits on it after its first 10 records (closed by TrySplit)

	mu        sync.Mutex
	delivered []string
	lanes     map[driver.LaneID]*countLane
	finishing []coordination.SplitID
	wg        sync.WaitGroup
}

type countLane struct {
	split    coordination.SplitID
	part     driver.PartitionID
	pos, end int64 // guarded by the source's mu
	stop     chan struct{}
	waker    *coordination.Waker
	stopped  sync.Once
}

func parseRange(b []byte) (int64, int64) {
	a, z, _ := strings.Cut(string(b), "-")
	x, _ := strconv.ParseInt(a, 10, 64)
	y, _ := strconv.ParseInt(z, 10, 64)
	return x, y
}

func (s *countSource) OpenSplit(o driver.Opening) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, z := parseRange(o.Split.Descriptor)
	if o.Resume != nil {
		a = o.Resume.Watermark
	}
	s.lanes[o.Lane] = &countLane{split: o.Split.ID, part: o.Partition, pos: a, end: z, stop: make(chan struct{}), waker: o.Waker}
	return nil
}

func (s *countSource) StartLanes(lanes []driver.Lane) {
	for _, dl := range lanes {
		l := s.lanes[dl.ID]
		s.wg.Go(func() { s.read(l) })
	}
}

func (s *countSource) read(l *countLane) {
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		runtime.Gosched()
		s.mu.Lock()
		if l.pos >= l.end {
			s.finishing = append(s.finishing, l.split)
			s.mu.Unlock()
			l.waker.Wake()
			return
		}
		s.delivered = append(s.delivered, fmt.Sprint(l.pos))
		l.pos++
		gate := s.gate
		s.mu.Unlock()
		if gate != nil && len(s.snapshot()) == 10 {
			select {
			case <-gate:
			case <-l.stop:
				return
			}
		}
	}
}

func (s *countSource) StopLanes(ids []driver.LaneID) {
	for _, id := range ids {
		if l := s.lanes[id]; l != nil {
			l.stopped.Do(func() { close(l.stop) })
		}
	}
	s.wg.Wait()
}

func (s *countSource) Acked() []driver.Watermark {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ws []driver.Watermark
	for _, l := range s.lanes {
		ws = append(ws, driver.Watermark{Partition: l.part, Value: l.pos})
	}
	return ws
}

func (s *countSource) EncodeCommit(split coordination.SplitID, w int64) (coordination.SplitProgress, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.lanes {
		if l.split == split {
			return coordination.SplitProgress{Watermark: w, Completed: w >= l.end}, nil
		}
	}
	return coordination.SplitProgress{}, fmt.Errorf("split %s not open", split)
}

func (s *countSource) Sweep(coordination.SplitID) (*coordination.SplitProgress, error) {
	return nil, nil
}
func (s *countSource) CloseSplit(coordination.SplitID) {}

func (s *countSource) TakeFinishing() []coordination.SplitID {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.finishing
	s.finishing = nil
	return f
}

func (s *countSource) Remaining(id driver.LaneID) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.lanes[id]; l != nil {
		return uint64(max(0, l.end-l.pos))
	}
	return 0
}

func (s *countSource) TrySplit(id driver.LaneID, keep float64) (driver.Cut, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lanes[id]
	if l == nil || l.end-l.pos < 4 {
		return driver.Cut{}, false, nil
	}
	at := l.pos + int64(keep*float64(l.end-l.pos))
	start := at
	if s.overlap {
		start--
	}
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
	cut := driver.Cut{Primary: []byte(fmt.Sprintf("0-%d", at)), Residual: []byte(fmt.Sprintf("%d-%d", start, l.end)), ResidualWeight: uint64(l.end - at)}
	l.end = at
	return cut, true, nil
}

func (s *countSource) snapshot() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.delivered...)
}

// newCountSource returns CheckSplitter's factory. Its second instance is
// the one CheckSplitter cuts: that one's reader waits after 10 records
// until the cut, so the lane cannot run out before it, however fast.
func newCountSource(overlap bool) func(testing.TB) (driver.SourceReader, func() []string) {
	n := 0
	return func(testing.TB) (driver.SourceReader, func() []string) {
		n++
		s := &countSource{overlap: overlap, lanes: map[driver.LaneID]*countLane{}}
		if n == 2 {
			s.gate = make(chan struct{})
		}
		return s, s.snapshot
	}
}

// recordingTB records failures; Fatalf ends the goroutine as testing's does.
type recordingTB struct {
	testing.TB
	mu       sync.Mutex
	failures []string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Errorf(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, a...))
}
func (r *recordingTB) Fatalf(format string, a ...any) {
	r.Errorf(format, a...)
	runtime.Goexit()
}

func check(t *testing.T, s testkit.SplittableSource) []string {
	r := &recordingTB{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); testkit.CheckSplitter(r, s) }()
	<-done
	return r.failures
}

func TestCheckSplitterPassesACorrectSource(t *testing.T) {
	split := coordination.SplitSpec{ID: "s", Descriptor: []byte("0-20000"), Weight: 20000}
	if f := check(t, testkit.SplittableSource{Split: split, New: newCountSource(false)}); len(f) > 0 {
		t.Fatalf("CheckSplitter failed a correct source: %v", f)
	}
}

func TestCheckSplitterCatchesAResidualThatOverlapsThePrimary(t *testing.T) {
	split := coordination.SplitSpec{ID: "s", Descriptor: []byte("0-20000"), Weight: 20000}
	f := check(t, testkit.SplittableSource{Split: split, New: newCountSource(true)})
	if len(f) == 0 || !strings.Contains(strings.Join(f, "\n"), "in both the primary and the residual") {
		t.Fatalf("CheckSplitter on an overlapping cut reported %v, want the overlap", f)
	}
}
