package driver_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/store/memstore"
)

// tablePlanner splits rows [0, rows) into ranges of perSplit rows; a
// split's descriptor is its range, lo and hi as two big-endian uint64s.
type tablePlanner struct{ rows, perSplit int64 }

func (p tablePlanner) Fingerprint() string {
	return fmt.Sprintf("table:v1:%d:%d", p.rows, p.perSplit)
}

func (p tablePlanner) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	plan := coordination.SplitPlan{Finality: coordination.PlanFinal}
	for lo := int64(0); lo < p.rows; lo += p.perSplit {
		hi := min(lo+p.perSplit, p.rows)
		desc := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(lo)), uint64(hi))
		plan.Splits = append(plan.Splits, coordination.PlannedSplit{Spec: coordination.SplitSpec{
			ID: coordination.SplitID(fmt.Sprintf("rows-%06d", lo)), Descriptor: desc, Weight: uint64(hi - lo),
		}})
	}
	return plan, nil
}

// tableSource reads row ranges with one reader goroutine per lane. It is a
// [driver.SourceReader] (what [driver.Run] takes) and a [driver.Pauser].
//
// Its lanes are keyed twice, as the driver names them: by split from
// OpenSplit to CloseSplit (EncodeCommit, Sweep, and Acked, which reports
// each lane's watermark under the lane's PartitionID), and by LaneID from
// StartLanes to StopLanes (StopLanes, PauseLanes, ResumeLanes). Both ids
// are in the Opening and in the [driver.Lane]; while a lane runs they name
// it one-to-one.
type tableSource struct {
	driver.SourceDefaults
	deliver func(row int64) // hands a row on; returns once the row is safe

	mu        sync.Mutex
	splits    map[coordination.SplitID]*tableLane // OpenSplit until CloseSplit
	lanes     map[driver.LaneID]*tableLane        // StartLanes until StopLanes
	finishing []coordination.SplitID              // for TakeFinishing
}

var (
	_ driver.SourceReader = (*tableSource)(nil) // a missing method is a compile error
	_ driver.Pauser       = (*tableSource)(nil)
)

// tableLane is one lane: the split's range, its reader's progress and the
// channels that stop and pause the reader.
type tableLane struct {
	split     coordination.SplitID
	partition driver.PartitionID // Acked reports under it
	hi        int64              // one past the range's last row
	acked     atomic.Int64       // one past the last acknowledged row
	waker     *coordination.Waker

	stop   chan struct{} // closed by StopLanes
	done   chan struct{} // closed by the reader when it has returned
	resume chan struct{} // non-nil while paused (guarded by the source's mu)
}

func newTableSource(deliver func(row int64)) *tableSource {
	return &tableSource{
		deliver: deliver,
		splits:  map[coordination.SplitID]*tableLane{},
		lanes:   map[driver.LaneID]*tableLane{},
	}
}

func (s *tableSource) OpenSplit(o driver.Opening) error {
	if len(o.Split.Descriptor) != 16 {
		return fmt.Errorf("split %s: descriptor is %d bytes, want 16", o.Split.ID, len(o.Split.Descriptor))
	}
	l := &tableLane{
		split:     o.Split.ID,
		partition: o.Partition,
		hi:        int64(binary.BigEndian.Uint64(o.Split.Descriptor[8:])),
		waker:     o.Waker,
	}
	l.acked.Store(int64(binary.BigEndian.Uint64(o.Split.Descriptor)))
	if o.Resume != nil {
		l.acked.Store(o.Resume.Watermark) // resume exactly at the committed cut
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.splits[o.Split.ID] = l
	return nil
}

func (s *tableSource) EncodeCommit(split coordination.SplitID, watermark int64) (coordination.SplitProgress, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.splits[split]
	return coordination.SplitProgress{Watermark: watermark, Completed: l != nil && watermark == l.hi}, nil
}

func (s *tableSource) Sweep(split coordination.SplitID) (*coordination.SplitProgress, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.splits[split]; l != nil && l.acked.Load() == l.hi { // every row acknowledged
		return &coordination.SplitProgress{Watermark: l.hi, Completed: true}, nil
	}
	return nil, nil
}

func (s *tableSource) CloseSplit(split coordination.SplitID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.splits, split)
}

func (s *tableSource) TakeFinishing() []coordination.SplitID {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.finishing
	s.finishing = nil
	return f
}

// StartLanes starts a reader goroutine per lane, from its acknowledged row.
func (s *tableSource) StartLanes(lanes []driver.Lane) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, dl := range lanes {
		l := s.splits[dl.Split.ID]
		l.stop, l.done = make(chan struct{}), make(chan struct{})
		s.lanes[dl.ID] = l
		go s.read(l)
	}
}

// read is a lane's reader: it delivers the lane's rows in order, advancing
// the acknowledged watermark after each, until the range ends or the lane is
// stopped; while the lane is paused it waits.
func (s *tableSource) read(l *tableLane) {
	defer close(l.done)
	for row := l.acked.Load(); row < l.hi; row++ {
		if !s.readOn(l) {
			return
		}
		s.deliver(row)
		l.acked.Store(row + 1)
	}
	s.mu.Lock()
	s.finishing = append(s.finishing, l.split)
	s.mu.Unlock()
	l.waker.Wake() // end of input: Run commits the lane at once
}

// readOn waits while l is paused and reports whether its reader may read
// the next row: false once l is stopped (a stop wins over a resume).
func (s *tableSource) readOn(l *tableLane) bool {
	select {
	case <-l.stop:
		return false
	default:
	}
	s.mu.Lock()
	resume := l.resume
	s.mu.Unlock()
	if resume == nil {
		return true
	}
	select {
	case <-l.stop:
		return false
	case <-resume:
		return s.readOn(l)
	}
}

// StopLanes stops the lanes' readers and returns only once every one of
// them has returned, so the lanes acknowledge nothing more. Lanes never
// started (the driver may list them at shutdown) are skipped.
func (s *tableSource) StopLanes(ids []driver.LaneID) {
	s.mu.Lock()
	var stopping []*tableLane
	for _, id := range ids {
		if l := s.lanes[id]; l != nil {
			close(l.stop)
			delete(s.lanes, id)
			stopping = append(stopping, l)
		}
	}
	s.mu.Unlock() // the readers take mu on their way out
	for _, l := range stopping {
		<-l.done
	}
}

// Acked returns the acknowledged watermark of every open lane, stopped ones
// included: Run reads it after the last StopLanes for the final commit.
func (s *tableSource) Acked() []driver.Watermark {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := make([]driver.Watermark, 0, len(s.splits))
	for _, l := range s.splits {
		ws = append(ws, driver.Watermark{Partition: l.partition, Value: l.acked.Load()})
	}
	return ws
}

// PauseLanes stops the lanes' readers at their next row, keeping the lanes
// open: Run calls it while their commits are not landing.
func (s *tableSource) PauseLanes(ids []driver.LaneID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if l := s.lanes[id]; l != nil && l.resume == nil {
			l.resume = make(chan struct{})
		}
	}
}

// ResumeLanes lets paused readers read on.
func (s *tableSource) ResumeLanes(ids []driver.LaneID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if l := s.lanes[id]; l != nil && l.resume != nil {
			close(l.resume)
			l.resume = nil
		}
	}
}

// rowTally counts deliveries per row, from every reader goroutine.
type rowTally struct {
	mu    sync.Mutex
	count map[int64]int
}

func (t *rowTally) deliver(row int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.count[row]++
}

// A source written by hand, for an embedder with a lane model of its own
// (work read in position order within ranges needs none: package lanes is
// that source). It keeps a reader goroutine per lane under [driver.Run],
// with a real coordinator on an in-memory store: every row is delivered,
// and the run ends when the job is complete. It declines drains
// (driver.SourceDefaults), so a move replays up to one commit interval.
func ExampleSourceReader() {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		panic(err)
	}
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "worker-1"
	cfg.Logger = slog.New(slog.DiscardHandler) // nil would log to slog.Default()
	st := memstore.New(cfg.LeaseDuration)
	defer st.Close()
	c, err := actors.Spawn(e, st, cfg)
	if err != nil {
		panic(err)
	}
	rows := &rowTally{count: map[int64]int{}}
	err = driver.Run(context.Background(), c, newTableSource(rows.deliver),
		driver.WithPlanner(tablePlanner{rows: 1000, perSplit: 250}))
	fmt.Println("run:", err)
	missing := 0
	for row := range int64(1000) {
		if rows.count[row] == 0 {
			missing++
		}
	}
	fmt.Printf("%d rows delivered, %d missing\n", len(rows.count), missing)
	// Output:
	// run: <nil>
	// 1000 rows delivered, 0 missing
}
