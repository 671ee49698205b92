package main

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
)

// readPace is how fast one lane reads: batch records every interval, like a
// reader paging through a remote table.
type readPace struct {
	batch    int64
	interval time.Duration
}

// newReadPace spreads perSecond records per lane over 50ms batches.
func newReadPace(perSecond int64) readPace {
	const tick = 50 * time.Millisecond
	batch := perSecond * int64(tick) / int64(time.Second)
	if batch >= 1 {
		return readPace{batch: batch, interval: tick}
	}
	return readPace{batch: 1, interval: time.Second / time.Duration(perSecond)}
}

// source is one worker's driver.Source over the generated data set. Each open
// split has a lane: a goroutine that reads the split's records batch by batch
// at the configured pace, delivers them to the sink (the ledger) and then
// acknowledges them by advancing the lane's watermark. Watermarks are record
// numbers (one past the last acknowledged record), so they are positions
// inside the split's own descriptor and a next owner resumes from the
// descriptor alone.
//
// The driver calls the Source methods from the worker's control goroutine
// only; lanes share just their atomics, the finishing list (under mu) and the
// sink with it.
type source struct {
	worker int             // index into the ledger
	sink   *ledger         // where delivered records go
	pace   readPace        // how fast a lane reads
	dead   <-chan struct{} // closed when the worker crashes: every lane stops at once

	lanes   map[coordination.SplitID]*lane // open lanes; control goroutine only
	closed  map[driver.LaneID]*lane        // closed lanes not yet settled; control goroutine only
	readers sync.WaitGroup                 // one per lane goroutine

	mu        sync.Mutex
	finishing []coordination.SplitID // lanes that reached end of input since TakeFinishing
}

// lane is the reading state of one tenancy of one split.
type lane struct {
	id        driver.LaneID
	partition driver.PartitionID
	split     coordination.SplitID
	records   recordRange // the split's records
	resume    int64       // where this tenancy started reading

	acked    atomic.Int64  // one past the last acknowledged record
	draining atomic.Bool   // intake stopped for a revocation
	quiet    chan struct{} // closed when the reader goroutine has exited
	stop     chan struct{} // closed once by halt
	halted   sync.Once

	reported int64 // the last watermark handed to the driver; control goroutine only
}

// halt makes the lane's reader stop before its next batch. It never blocks.
func (l *lane) halt() { l.halted.Do(func() { close(l.stop) }) }

// newSource returns the source of the worker with ledger index worker.
func newSource(worker int, sink *ledger, pace readPace, dead <-chan struct{}) *source {
	return &source{
		worker: worker,
		sink:   sink,
		pace:   pace,
		dead:   dead,
		lanes:  make(map[coordination.SplitID]*lane),
		closed: make(map[driver.LaneID]*lane),
	}
}

// OpenSplit decodes the split's record range and starts its reader at the
// resume watermark (the range's start when fresh). It does not block.
func (s *source) OpenSplit(o driver.Opening) error {
	records, err := decodeDescriptor(o.Split.Descriptor)
	if err != nil {
		return err
	}
	resume := records.Start
	if o.Resume != nil {
		resume = o.Resume.Watermark
	}
	if old := s.lanes[o.Split.ID]; old != nil {
		old.halt() // the driver closes a tenancy before opening the next; be safe anyway
	}
	l := &lane{
		id:        o.Lane,
		partition: o.Partition,
		split:     o.Split.ID,
		records:   records,
		resume:    resume,
		quiet:     make(chan struct{}),
		stop:      make(chan struct{}),
		reported:  resume,
	}
	l.acked.Store(resume)
	s.lanes[o.Split.ID] = l
	s.readers.Go(func() { s.read(l, o.Waker) })
	return nil
}

// read is a lane's reader goroutine: read a batch (the pace stands in for
// I/O), deliver it to the sink, acknowledge it; stop at end of input, when the
// lane is halted or draining, or when the worker crashes.
func (s *source) read(l *lane, w *coordination.Waker) {
	defer close(l.quiet)
	timer := time.NewTimer(s.pace.interval)
	defer timer.Stop()
	pos := l.resume
	for pos < l.records.End {
		if l.draining.Load() {
			return // intake stopped at a batch boundary: everything read is acknowledged
		}
		select {
		case <-timer.C:
			timer.Reset(s.pace.interval)
		case <-l.stop:
			return
		case <-s.dead:
			return
		}
		batch := recordRange{Start: pos, End: min(pos+s.pace.batch, l.records.End)}
		s.sink.deliver(s.worker, batch)
		pos = batch.End
		l.acked.Store(pos)
	}
	select {
	case <-l.stop:
		return
	case <-s.dead:
		return
	default:
	}
	s.mu.Lock()
	s.finishing = append(s.finishing, l.split)
	s.mu.Unlock()
	w.Wake() // end of input: the driver turns it into CommitReady
}

// ValidateResume accepts carried progress only if its watermark lies inside
// the split's record range.
func (s *source) ValidateResume(spec coordination.SplitSpec, p coordination.SplitProgress) error {
	records, err := decodeDescriptor(spec.Descriptor)
	if err != nil {
		return err
	}
	if p.Watermark < records.Start || p.Watermark > records.End {
		return fmt.Errorf("split %s: resume watermark %d is outside its records %s", spec.ID, p.Watermark, records)
	}
	return nil
}

// EncodeCommit snapshots the split's progress at watermark. It is Completed
// only when every record of the split is acknowledged and the split is not
// being drained for a revocation.
func (s *source) EncodeCommit(split coordination.SplitID, watermark int64) (coordination.SplitProgress, error) {
	l := s.lanes[split]
	if l == nil {
		return coordination.SplitProgress{}, fmt.Errorf("split %s: commit for a split that is not open", split)
	}
	if watermark < l.records.Start || watermark > l.records.End {
		return coordination.SplitProgress{}, fmt.Errorf("split %s: watermark %d is outside its records %s", split, watermark, l.records)
	}
	return coordination.SplitProgress{
		Watermark: watermark,
		Completed: watermark == l.records.End && !l.draining.Load(),
	}, nil
}

// Sweep returns completed progress for an open, live lane whose every record
// is acknowledged: an empty split, a split resumed at its end, or one whose
// completed commit did not confirm. Otherwise (not open yet, draining, or
// still reading) it returns nil.
func (s *source) Sweep(split coordination.SplitID) (*coordination.SplitProgress, error) {
	l := s.lanes[split]
	if l == nil || l.draining.Load() || l.acked.Load() < l.records.End {
		return nil, nil
	}
	return &coordination.SplitProgress{Watermark: l.records.End, Completed: true}, nil
}

// CloseSplit halts the split's reader without waiting for it and moves the
// lane to the closed set, where settle finds it. It tolerates a split that was
// never opened.
func (s *source) CloseSplit(split coordination.SplitID) {
	if l := s.lanes[split]; l != nil {
		l.halt()
		delete(s.lanes, split)
		s.closed[l.id] = l
	}
}

// laneEnd is how a closed lane ended.
type laneEnd struct {
	split   coordination.SplitID
	records recordRange
	acked   int64 // final watermark
}

// settle waits until the readers of the given closed lanes have exited (so
// nothing more is read for them: the driver's rule for LanesRevoked) and
// returns how each ended. Unknown lanes are skipped.
func (s *source) settle(ids []driver.LaneID) []laneEnd {
	var out []laneEnd
	for _, id := range ids {
		l := s.closed[id]
		if l == nil {
			continue
		}
		<-l.quiet
		delete(s.closed, id)
		out = append(out, laneEnd{split: l.split, records: l.records, acked: l.acked.Load()})
	}
	return out
}

// TakeFinishing returns the splits whose lanes reached end of input since the
// last call.
func (s *source) TakeFinishing() []coordination.SplitID {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.finishing
	s.finishing = nil
	return out
}

// BeginRevoke stops the lane's intake at the next batch boundary; what was
// read by then is acknowledged and committed as a replay-free cut. It refuses
// a split that is not open.
func (s *source) BeginRevoke(split coordination.SplitID) bool {
	l := s.lanes[split]
	if l == nil {
		return false
	}
	l.draining.Store(true)
	return true
}

// DrainReady returns the cut of a draining lane once its reader has stopped:
// every record read is then acknowledged. It keeps returning the cut until the
// driver closes the split.
func (s *source) DrainReady(split coordination.SplitID) (*coordination.SplitProgress, error) {
	l := s.lanes[split]
	if l == nil || !l.draining.Load() {
		return nil, nil
	}
	select {
	case <-l.quiet:
		return &coordination.SplitProgress{Watermark: l.acked.Load()}, nil
	default:
		return nil, nil
	}
}

// advanced returns the watermark of every open lane that acknowledged records
// since the last call, for a periodic commit.
func (s *source) advanced() []driver.Watermark {
	var ws []driver.Watermark
	for _, l := range s.lanes {
		if wm := l.acked.Load(); wm > l.reported {
			l.reported = wm
			ws = append(ws, driver.Watermark{Partition: l.partition, Value: wm})
		}
	}
	return ws
}

// watermarksOf returns the current watermark of the open lanes among parts.
func (s *source) watermarksOf(parts []driver.PartitionID) []driver.Watermark {
	want := make(map[driver.PartitionID]bool, len(parts))
	for _, p := range parts {
		want[p] = true
	}
	var ws []driver.Watermark
	for _, l := range s.lanes {
		if want[l.partition] {
			wm := l.acked.Load()
			l.reported = max(l.reported, wm)
			ws = append(ws, driver.Watermark{Partition: l.partition, Value: wm})
		}
	}
	return ws
}

// resumeOf returns where the open lane of split started reading.
func (s *source) resumeOf(split coordination.SplitID) (int64, bool) {
	l := s.lanes[split]
	if l == nil {
		return 0, false
	}
	return l.resume, true
}

// held returns the number of open lanes.
func (s *source) held() int { return len(s.lanes) }

// stopAll halts every lane, waits for the readers to exit and returns each
// lane's final watermark: step 2 of the driver's stop sequence.
func (s *source) stopAll() []driver.Watermark {
	for _, l := range s.lanes {
		l.halt()
	}
	s.readers.Wait()
	var ws []driver.Watermark
	for _, l := range s.lanes {
		ws = append(ws, driver.Watermark{Partition: l.partition, Value: l.acked.Load()})
	}
	return ws
}

// wait blocks until every reader goroutine this source started has exited.
// Call it after the driver closed every split (Shutdown) or after a crash.
func (s *source) wait() { s.readers.Wait() }
