package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
)

// rangePlanner plans splits splits of rows rows each; a split's descriptor
// is its first row, in decimal.
type rangePlanner struct{ splits, rows int64 }

func (p rangePlanner) Fingerprint() string { return fmt.Sprintf("e2e:v1:%d:%d", p.splits, p.rows) }

func (p rangePlanner) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	plan := coordination.SplitPlan{Finality: coordination.PlanFinal}
	for i := range p.splits {
		plan.Splits = append(plan.Splits, coordination.PlannedSplit{Spec: coordination.SplitSpec{
			ID:         coordination.SplitID(fmt.Sprintf("rows-%03d", i)),
			Descriptor: []byte(strconv.FormatInt(i*p.rows, 10)),
			Weight:     uint64(p.rows),
		}})
	}
	return plan, nil
}

// tenancy is what one lane (one tenancy of one split on one worker)
// delivered: the contiguous rows [start, end).
type tenancy struct {
	split      coordination.SplitID
	worker     string
	start, end int64
	first      time.Time // when its first row was delivered
}

// ledger records every delivery of every worker. Safe for concurrent use.
type ledger struct {
	mu        sync.Mutex
	rows      map[int64]int       // deliveries per row
	tenancies map[string]*tenancy // by worker and lane
	order     []string            // tenancy keys in creation order
}

func newLedger() *ledger {
	return &ledger{rows: map[int64]int{}, tenancies: map[string]*tenancy{}}
}

// deliver records rows [from, to) of split delivered by the tenancy key.
func (l *ledger) deliver(key, worker string, split coordination.SplitID, from, to int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.tenancies[key]
	if t == nil {
		t = &tenancy{split: split, worker: worker, start: from, first: time.Now()}
		l.tenancies[key] = t
		l.order = append(l.order, key)
	}
	t.end = to
	for r := from; r < to; r++ {
		l.rows[r]++
	}
}

// delivered returns the rows delivered so far, duplicates included.
func (l *ledger) delivered() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, c := range l.rows {
		n += int64(c)
	}
	return n
}

// verdict is what the ledger proves about a finished job.
type verdict struct {
	missing    []int64 // rows never delivered (the first few)
	duplicates int64   // deliveries beyond the first
	maxReplay  int64   // the largest overlap of a tenancy with its predecessor
	moves      int     // tenancies that followed another of the same split
}

// judge checks rows [0, total) against the ledger.
func (l *ledger) judge(total int64) verdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	var v verdict
	for r := range total {
		switch c := l.rows[r]; {
		case c == 0 && len(v.missing) < 10:
			v.missing = append(v.missing, r)
		case c > 1:
			v.duplicates += int64(c - 1)
		}
	}
	bySplit := map[coordination.SplitID][]*tenancy{}
	for _, k := range l.order {
		t := l.tenancies[k]
		bySplit[t.split] = append(bySplit[t.split], t)
	}
	for _, ts := range bySplit {
		sort.SliceStable(ts, func(i, j int) bool { return ts[i].first.Before(ts[j].first) })
		reach := ts[0].end // the furthest row any earlier tenancy delivered
		for _, t := range ts[1:] {
			v.moves++
			v.maxReplay = max(v.maxReplay, reach-t.start)
			reach = max(reach, t.end)
		}
	}
	return v
}

// lane is one lane of a paced source.
type lane struct {
	key       string
	split     coordination.SplitID
	partition driver.PartitionID
	end       int64
	acked     int64         // one past the last delivered row; under the source's mu
	resumed   chan struct{} // non-nil while paused; closed by ResumeLanes
	stop      chan struct{} // closed by StopLanes
	done      chan struct{} // closed when the reader has exited
	started   bool
}

// source is one worker's driver.Source, Reader and Pauser: each lane reads
// batch rows every tick on its own goroutine into the ledger, then
// acknowledges them. Safe for concurrent use.
type source struct {
	driver.SourceDefaults
	worker string
	rows   int64 // rows per split
	batch  int64
	tick   time.Duration
	out    *ledger

	mu        sync.Mutex
	waker     *coordination.Waker
	open      map[coordination.SplitID]*lane // by split, OpenSplit to CloseSplit
	byLane    map[driver.LaneID]*lane        // every lane ever opened
	finishing []coordination.SplitID
	readers   sync.WaitGroup
}

func newSource(worker string, rows, batch int64, tick time.Duration, out *ledger) *source {
	return &source{worker: worker, rows: rows, batch: batch, tick: tick, out: out,
		open: map[coordination.SplitID]*lane{}, byLane: map[driver.LaneID]*lane{}}
}

func (s *source) OpenSplit(o driver.Opening) error {
	first, err := strconv.ParseInt(string(o.Split.Descriptor), 10, 64)
	if err != nil {
		return fmt.Errorf("split %s: descriptor %q is not a row number", o.Split.ID, o.Split.Descriptor)
	}
	l := &lane{key: fmt.Sprintf("%s/%d", s.worker, o.Lane), split: o.Split.ID, partition: o.Partition, end: first + s.rows, acked: first,
		stop: make(chan struct{}), done: make(chan struct{})}
	if o.Resume != nil {
		l.acked = o.Resume.Watermark
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waker = o.Waker
	s.open[o.Split.ID] = l
	s.byLane[o.Lane] = l
	return nil
}

func (s *source) EncodeCommit(split coordination.SplitID, w int64) (coordination.SplitProgress, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.open[split]
	if l == nil {
		return coordination.SplitProgress{}, fmt.Errorf("split %s is not open", split)
	}
	return coordination.SplitProgress{Watermark: w, Completed: w == l.end}, nil
}

func (s *source) Sweep(split coordination.SplitID) (*coordination.SplitProgress, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.open[split]; l != nil && l.acked == l.end {
		return &coordination.SplitProgress{Watermark: l.end, Completed: true}, nil
	}
	return nil, nil
}

func (s *source) CloseSplit(split coordination.SplitID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open, split)
}

func (s *source) TakeFinishing() []coordination.SplitID {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.finishing
	s.finishing = nil
	return f
}

func (s *source) StartLanes(lanes []driver.Lane) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, dl := range lanes {
		if l := s.byLane[dl.ID]; l != nil && !l.started {
			l.started = true
			s.readers.Go(func() { s.read(l) })
		}
	}
}

// read is a lane's reader: a batch per tick, waiting while paused.
func (s *source) read(l *lane) {
	defer close(l.done)
	tick := time.NewTicker(s.tick)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		resumed, from := l.resumed, l.acked
		s.mu.Unlock()
		if resumed != nil {
			select {
			case <-resumed:
				continue
			case <-l.stop:
				return
			}
		}
		if from == l.end {
			return
		}
		to := min(from+s.batch, l.end)
		s.out.deliver(l.key, s.worker, l.split, from, to)
		s.mu.Lock()
		l.acked = to
		if to == l.end {
			s.finishing = append(s.finishing, l.split)
		}
		w := s.waker
		s.mu.Unlock()
		if to == l.end {
			w.Wake() // end of input: Run commits it at once
			return
		}
	}
}

func (s *source) StopLanes(ids []driver.LaneID) {
	for _, id := range ids {
		s.mu.Lock()
		l := s.byLane[id]
		s.mu.Unlock()
		if l == nil {
			continue
		}
		select {
		case <-l.stop:
		default:
			close(l.stop)
		}
		s.mu.Lock()
		started := l.started
		s.mu.Unlock()
		if started {
			<-l.done
		}
	}
}

func (s *source) Acked() []driver.Watermark {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ws []driver.Watermark
	for _, l := range s.open {
		ws = append(ws, driver.Watermark{Partition: l.partition, Value: l.acked})
	}
	return ws
}

func (s *source) PauseLanes(ids []driver.LaneID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if l := s.byLane[id]; l != nil && l.resumed == nil {
			l.resumed = make(chan struct{})
		}
	}
}

func (s *source) ResumeLanes(ids []driver.LaneID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if l := s.byLane[id]; l != nil && l.resumed != nil {
			close(l.resumed)
			l.resumed = nil
		}
	}
}
