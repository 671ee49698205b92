package main

import (
	"fmt"
	"slices"
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

// newReadPace spreads perSecond records per lane over 100ms batches (each
// batch is one ledger write).
func newReadPace(perSecond int64) readPace {
	const tick = 100 * time.Millisecond
	batch := perSecond * int64(tick) / int64(time.Second)
	if batch >= 1 {
		return readPace{batch: batch, interval: tick}
	}
	return readPace{batch: 1, interval: time.Second / time.Duration(perSecond)}
}

// source is one worker's driver.Source, driver.Reader and driver.Pauser over the generated
// data set. Each open split has a lane; StartLanes starts its reader, a
// goroutine that reads the split's records batch by batch at the configured
// pace, records each batch in the ledger (the sink) and only then
// acknowledges it by advancing the lane's watermark. Watermarks are record
// numbers (one past the last acknowledged record), so they are positions
// inside the split's own descriptor and a next owner resumes from the
// descriptor alone.
//
// driver.Run calls the Source and Reader methods from one goroutine; the
// readers share just their atomics, the finishing list (under mu) and the
// ledger with it.
type source struct {
	name   string          // the worker's instance id, recorded with each delivery
	run    string          // unique per process run: with name and the lane id, part of every ledger key
	sink   *ledger         // where delivered records go
	pace   readPace        // how fast a lane reads
	dead   <-chan struct{} // closed when the worker crashes: every lane stops at once
	events laneEvents      // told about gains and ends, for the event log

	lanes   map[coordination.SplitID]*lane // open lanes; Run's goroutine only
	closed  map[driver.LaneID]*lane        // closed lanes not yet stopped; Run's goroutine only
	readers sync.WaitGroup                 // one per lane goroutine

	held      atomic.Int64 // open lanes, for the display
	delivered atomic.Int64 // records this worker delivered, duplicates included
	share     atomic.Int64 // records of the splits this worker was given, from where it resumed
	completed atomic.Int64 // splits this worker read to their end
	reading   atomic.Int64 // lanes whose reader is reading, for the tail-idle figure

	noCut bool // -runtime-split=false: TrySplit refuses and Remaining reports nothing

	mu        sync.Mutex
	finishing []coordination.SplitID // lanes that reached end of input since TakeFinishing
}

// laneEvents is what the source reports about its lanes (the fleet).
type laneEvents interface {
	gained(worker string, split coordination.SplitID, resume int64, prev *delivery)
	ended(worker string, end laneEnd)
}

// lane is the reading state of one tenancy of one split.
type lane struct {
	id        driver.LaneID
	partition driver.PartitionID
	split     coordination.SplitID
	key       string      // its ledger key
	records   recordRange // the split's records as opened (a runtime cut moves end, not this)
	resume    int64       // where this tenancy started reading
	started   bool        // its reader was started; Run's goroutine only
	waker     *coordination.Waker

	acked    atomic.Int64  // one past the last acknowledged (recorded) record
	end      atomic.Int64  // one past the lane's last record: records.End until a cut moves it down
	cutMu    sync.Mutex    // orders TrySplit against the reader taking its next batch
	taken    int64         // one past the last record the reader has taken (guarded by cutMu)
	draining atomic.Bool   // intake stopped for a revocation
	gate     sync.Mutex    // guards resumed
	resumed  chan struct{} // non-nil while paused; closed by resumeIntake
	quiet    chan struct{} // closed when the reader goroutine has exited
	stop     chan struct{} // closed once by halt
	halted   sync.Once
}

// halt makes the lane's reader stop before its next batch. It never blocks.
func (l *lane) halt() { l.halted.Do(func() { close(l.stop) }) }

// pauseIntake makes the lane's reader wait before its next batch until resume.
func (l *lane) pauseIntake() {
	l.gate.Lock()
	defer l.gate.Unlock()
	if l.resumed == nil {
		l.resumed = make(chan struct{})
	}
}

// resumeIntake lets a paused reader go on. It never blocks.
func (l *lane) resumeIntake() {
	l.gate.Lock()
	defer l.gate.Unlock()
	if l.resumed != nil {
		close(l.resumed)
		l.resumed = nil
	}
}

// pausedUntil returns the channel a paused reader waits on, nil when not
// paused.
func (l *lane) pausedUntil() <-chan struct{} {
	l.gate.Lock()
	defer l.gate.Unlock()
	return l.resumed
}

// newSource returns the source of worker name; run tells its ledger keys
// apart from those of the worker's earlier runs.
func newSource(name, run string, sink *ledger, pace readPace, dead <-chan struct{}, events laneEvents) *source {
	return &source{
		name:   name,
		run:    run,
		sink:   sink,
		pace:   pace,
		dead:   dead,
		events: events,
		lanes:  make(map[coordination.SplitID]*lane),
		closed: make(map[driver.LaneID]*lane),
	}
}

// OpenSplit decodes the split's record range and prepares its lane at the
// resume watermark (the range's start when fresh); reading starts in
// StartLanes.
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
		key:       fmt.Sprintf("%s.%s.%s.%d", o.Split.ID, s.name, s.run, o.Lane),
		records:   records,
		resume:    resume,
		quiet:     make(chan struct{}),
		stop:      make(chan struct{}),
	}
	l.acked.Store(resume)
	l.end.Store(records.End)
	l.taken = resume
	s.lanes[o.Split.ID] = l
	l.waker = o.Waker
	s.held.Add(1)
	return nil
}

// StartLanes starts the readers of newly opened lanes and reports each gain
// with the split's previous delivery, if the ledger has one.
func (s *source) StartLanes(lanes []driver.Lane) {
	for _, dl := range lanes {
		l := s.lanes[dl.Split.ID]
		if l == nil || l.id != dl.ID || l.started {
			continue
		}
		l.started = true
		s.share.Add(l.end.Load() - l.resume)
		var prev *delivery
		if d, ok := s.sink.previous(l.split, l.key); ok {
			prev = &d
		}
		s.events.gained(s.name, l.split, l.resume, prev)
		s.readers.Go(func() { s.read(l) })
	}
}

// read is a lane's reader goroutine: read a batch (the pace stands in for
// I/O), record it in the ledger, acknowledge it; stop at end of input, when
// the lane is halted or draining, or when the worker crashes.
func (s *source) read(l *lane) {
	defer close(l.quiet)
	s.reading.Add(1)
	defer s.reading.Add(-1)
	timer := time.NewTimer(s.pace.interval)
	defer timer.Stop()
	pos := l.resume
	for pos < l.end.Load() {
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
		if resumed := l.pausedUntil(); resumed != nil {
			select {
			case <-resumed: // resumed, or draining: the loop decides
			case <-l.stop:
				return
			case <-s.dead:
				return
			}
			continue
		}
		end := l.take(pos, s.pace.batch)
		if end <= pos {
			break // cut at pos
		}
		if err := s.sink.record(l.key, delivery{Split: l.split, Worker: s.name, Start: l.resume, End: end}); err != nil {
			continue // not acknowledged: retried at the next tick
		}
		s.delivered.Add(end - pos)
		pos = end
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
	l.waker.Wake() // end of input: the driver turns it into CommitReady
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
	end := l.end.Load()
	if watermark < l.records.Start || watermark > end {
		return coordination.SplitProgress{}, fmt.Errorf("split %s: watermark %d is outside its records %s", split, watermark, recordRange{Start: l.records.Start, End: end})
	}
	return coordination.SplitProgress{
		Watermark: watermark,
		Completed: watermark == end && !l.draining.Load(),
	}, nil
}

// Sweep returns completed progress for an open, live lane whose every record
// is acknowledged: an empty split, a split resumed at its end, or one whose
// completed commit did not confirm. Otherwise (not open yet, draining, or
// still reading) it returns nil.
func (s *source) Sweep(split coordination.SplitID) (*coordination.SplitProgress, error) {
	l := s.lanes[split]
	if l == nil || l.draining.Load() || l.acked.Load() < l.end.Load() {
		return nil, nil
	}
	return &coordination.SplitProgress{Watermark: l.end.Load(), Completed: true}, nil
}

// CloseSplit halts the split's reader without waiting for it and moves the
// lane to the closed set, where StopLanes finds it. It tolerates a split
// that was never opened.
func (s *source) CloseSplit(split coordination.SplitID) {
	if l := s.lanes[split]; l != nil {
		l.halt()
		delete(s.lanes, split)
		s.closed[l.id] = l
		s.held.Add(-1)
	}
}

// laneEnd is how a closed lane ended.
type laneEnd struct {
	split    coordination.SplitID
	records  recordRange
	acked    int64 // final watermark
	drained  bool  // handed back after a drain
	complete bool  // read to its end
}

// StopLanes halts the given lanes and waits until their readers have exited,
// so nothing more is read for them. Lanes the driver already closed (revoked
// or retired) are reported as ended; open ones (the final stop before
// Shutdown) stay open for the final commit.
func (s *source) StopLanes(ids []driver.LaneID) {
	for _, id := range ids {
		if l := s.closed[id]; l != nil {
			delete(s.closed, id)
			s.quiesce(l)
			end := laneEnd{split: l.split, records: recordRange{Start: l.records.Start, End: l.end.Load()}, acked: l.acked.Load(), drained: l.draining.Load()}
			end.complete = end.acked == end.records.End
			if end.complete {
				s.completed.Add(1)
			}
			s.events.ended(s.name, end)
			continue
		}
		for _, l := range s.lanes {
			if l.id == id {
				s.quiesce(l)
			}
		}
	}
}

// quiesce halts l and waits for its reader, if it was started.
func (s *source) quiesce(l *lane) {
	l.halt()
	if l.started {
		<-l.quiet
	}
}

// Acked returns the acknowledged watermark of every open lane.
func (s *source) Acked() []driver.Watermark {
	ws := make([]driver.Watermark, 0, len(s.lanes))
	for _, l := range s.lanes {
		ws = append(ws, driver.Watermark{Partition: l.partition, Value: l.acked.Load()})
	}
	return ws
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
	l.resumeIntake() // a paused reader stops at once instead
	return true
}

// DrainReady returns the cut of a draining lane once its reader has stopped
// (or was never started): every record read is then acknowledged. It keeps
// returning the cut until the driver closes the split.
func (s *source) DrainReady(split coordination.SplitID) (*coordination.SplitProgress, error) {
	l := s.lanes[split]
	if l == nil || !l.draining.Load() {
		return nil, nil
	}
	if l.started {
		select {
		case <-l.quiet:
		default:
			return nil, nil
		}
	}
	return &coordination.SplitProgress{Watermark: l.acked.Load()}, nil
}

// PauseLanes makes the given lanes' readers wait before their next batch:
// their commits are not landing, so nothing more should be read for now.
func (s *source) PauseLanes(ids []driver.LaneID) {
	for _, l := range s.lanes {
		if slices.Contains(ids, l.id) {
			l.pauseIntake()
		}
	}
}

// ResumeLanes lets paused readers go on where they stopped.
func (s *source) ResumeLanes(ids []driver.LaneID) {
	for _, l := range s.lanes {
		if slices.Contains(ids, l.id) {
			l.resumeIntake()
		}
	}
}

// wait blocks until every reader goroutine this source started has exited.
// Call it after driver.Run returned.
func (s *source) wait() { s.readers.Wait() }
