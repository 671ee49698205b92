package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
)

// retryPause is how long a lane waits after a failed page before it tries
// the page again.
const retryPause = 200 * time.Millisecond

// source is one worker's driver.Source and driver.Reader over the table. Each
// open split has a lane: a goroutine that reads the split's key range in
// keyset pages and writes each page to the sink in one transaction that also
// raises the split's watermark in the sink. Only after that transaction
// commits does the lane acknowledge the page (its watermark, one past the
// page's last key), and only acknowledged watermarks are committed to the
// coordinator: the coordinator's watermark of a split never passes the
// sink's.
//
// driver.Run calls every method from its own goroutine; the lanes share only
// their atomics, the finishing list (under mu) and the tally with it.
type source struct {
	worker     string
	pager      *pager
	sink       *sink
	sinkResume bool          // start a lane at the sink's watermark when it is ahead
	pause      time.Duration // wait between pages (tests slow lanes down with it); 0 for none
	tally      *tally
	log        *slog.Logger

	ctx  context.Context    // the lanes' I/O; ended by kill
	kill context.CancelFunc // ends ctx

	lanes   map[coordination.SplitID]*lane // lanes of open splits; Run's goroutine only
	byID    map[driver.LaneID]*lane        // lanes not yet stopped; Run's goroutine only
	readers sync.WaitGroup                 // one per started lane
	open    atomic.Int64                   // len(lanes), for the kill's choice of victim
	roundAt atomic.Int64                   // unix nanoseconds of Run's last Acked call: the start of a commit round

	mu        sync.Mutex
	finishing []coordination.SplitID // lanes that reached end of input since TakeFinishing
	reading   map[*lane]bool         // started lanes not yet stopped, for the kill's choice of moment
}

// lane is the state of one tenancy of one split.
type lane struct {
	id        driver.LaneID
	partition driver.PartitionID
	split     coordination.SplitID
	keys      idRange // the range as opened (a runtime cut moves hi, not this)
	weight    uint64  // the split's weight as opened: its estimated rows
	resumed   bool    // opened from committed progress (not a fresh split)
	waker     *coordination.Waker

	acked    atomic.Int64  // one past the last key whose page committed in the sink
	hi       atomic.Int64  // one past the lane's last key: keys.Hi until a cut moves it down
	cutMu    sync.Mutex    // orders TrySplit against the reader taking its next page
	taken    int64         // one past the last key of the pages the reader has taken (guarded by cutMu)
	encoded  atomic.Int64  // the last watermark handed to the coordinator to commit (at most what it holds)
	filled   atomic.Int64  // one past the last key of this lane's last page that held rows
	draining atomic.Bool   // intake stopped for a revocation
	stop     chan struct{} // closed once by halt
	halted   sync.Once
	done     chan struct{} // closed when the reader exits; nil until started
}

// halt makes the lane's reader stop before its next page. It never blocks.
func (l *lane) halt() { l.halted.Do(func() { close(l.stop) }) }

// quiet reports whether the lane's reader is not running (exited, or never
// started), so its watermark no longer moves.
func (l *lane) quiet() bool {
	if l.done == nil {
		return true
	}
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// newSource returns worker's source reading through p and writing to s.
func newSource(worker string, p *pager, s *sink, sinkResume bool, t *tally, log *slog.Logger) *source {
	ctx, kill := context.WithCancel(context.Background())
	return &source{
		worker:     worker,
		pager:      p,
		sink:       s,
		sinkResume: sinkResume,
		tally:      t,
		log:        log,
		ctx:        ctx,
		kill:       kill,
		lanes:      make(map[coordination.SplitID]*lane),
		byID:       make(map[driver.LaneID]*lane),
		reading:    make(map[*lane]bool),
	}
}

// OpenSplit decodes the split's key range and sets its lane at the resume
// watermark (the range's start when fresh). Reading starts in StartLanes.
func (s *source) OpenSplit(o driver.Opening) error {
	keys, err := decodeRange(o.Split.ID, o.Split.Descriptor, s.pager.t.name)
	if err != nil {
		return err
	}
	if old := s.lanes[o.Split.ID]; old != nil {
		old.halt() // the driver closes a tenancy before opening the next; be safe anyway
	}
	l := &lane{
		id:        o.Lane,
		partition: o.Partition,
		split:     o.Split.ID,
		keys:      keys,
		weight:    max(1, o.Split.Weight),
		resumed:   o.Resume != nil,
		waker:     o.Waker,
		stop:      make(chan struct{}),
	}
	l.acked.Store(keys.Lo)
	if o.Resume != nil {
		l.acked.Store(o.Resume.Watermark)
	}
	l.hi.Store(keys.Hi)
	l.taken = l.acked.Load()
	l.encoded.Store(l.acked.Load())
	l.filled.Store(l.acked.Load())
	s.lanes[o.Split.ID] = l
	s.byID[l.id] = l
	s.open.Store(int64(len(s.lanes)))
	return nil
}

// StartLanes starts the readers of newly opened lanes.
func (s *source) StartLanes(lanes []driver.Lane) {
	for _, dl := range lanes {
		l := s.byID[dl.ID]
		if l == nil || l.done != nil {
			continue
		}
		l.done = make(chan struct{})
		s.mu.Lock()
		s.reading[l] = true
		s.mu.Unlock()
		s.readers.Go(func() { s.read(l) })
	}
}

// StopLanes halts the lanes' readers and waits until they exited, so their
// watermarks no longer move.
func (s *source) StopLanes(ids []driver.LaneID) {
	for _, id := range ids {
		if l := s.byID[id]; l != nil {
			l.halt()
		}
	}
	for _, id := range ids {
		l := s.byID[id]
		if l == nil {
			continue
		}
		if l.done != nil {
			<-l.done
		}
		s.mu.Lock()
		delete(s.reading, l)
		s.mu.Unlock()
		delete(s.byID, id)
	}
}

// Acked returns the acknowledged watermark of every lane not yet stopped.
// Run calls it at the start of every commit round.
func (s *source) Acked() []driver.Watermark {
	s.roundAt.Store(time.Now().UnixNano())
	ws := make([]driver.Watermark, 0, len(s.byID))
	for _, l := range s.byID {
		ws = append(ws, driver.Watermark{Partition: l.partition, Value: l.acked.Load()})
	}
	return ws
}

// read is a lane's reader: page by page, read the next keys from the source
// table, write them to the sink in one transaction with the split's
// watermark, then acknowledge them. It stops at the end of the range, when
// the lane is halted or draining, or when the worker is killed.
func (s *source) read(l *lane) {
	defer close(l.done)
	pos := l.acked.Load()
	if s.sinkResume {
		pos = s.skipToSink(l, pos)
	}
	for pos < l.hi.Load() {
		if l.draining.Load() || s.ctx.Err() != nil {
			return // intake stopped at a page boundary: every page read is acknowledged
		}
		if !s.wait(l, s.pause) {
			return
		}
		rows, next, err := s.pager.page(s.ctx, pos, l.hi.Load())
		var absorbed int64
		if err == nil {
			rows, next = l.take(rows, next)
			absorbed, err = s.sink.write(s.ctx, string(l.split), rows, next)
		}
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			s.log.Warn("page failed; retrying", "split", l.split, "err", err)
			if !s.wait(l, retryPause) {
				return
			}
			continue
		}
		s.tally.written.Add(int64(len(rows)) - absorbed)
		s.tally.absorbed.Add(absorbed)
		pos = next
		l.acked.Store(pos)
		if len(rows) > 0 {
			l.filled.Store(pos)
		}
	}
	s.mu.Lock()
	s.finishing = append(s.finishing, l.split)
	s.mu.Unlock()
	l.waker.Wake() // end of input: the driver turns it into CommitReady
}

// wait waits d (not at all when d is 0) and reports whether the lane may go
// on: false once it is halted or the worker killed.
func (s *source) wait(l *lane, d time.Duration) bool {
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-l.stop:
			return false
		case <-s.ctx.Done():
			return false
		case <-t.C:
		}
	}
	select {
	case <-l.stop:
		return false
	case <-s.ctx.Done():
		return false
	default:
		return true
	}
}

// skipToSink returns where the lane of a resumed split should read from: the
// sink's watermark of the split when it is ahead of pos (the coordinator's
// watermark), since the sink holds those rows already. It acknowledges that
// position at once. On a failed lookup it keeps pos; the sink absorbs what is
// replayed.
func (s *source) skipToSink(l *lane, pos int64) int64 {
	mark, ok, err := s.sink.watermark(s.ctx, string(l.split))
	if err != nil && s.ctx.Err() != nil {
		return pos // killed: the lane stops before its first page anyway
	}
	if err != nil {
		s.log.Warn("sink watermark unreadable; replaying from the coordinator's", "split", l.split, "err", err)
		return pos
	}
	if !ok || mark <= pos {
		return pos
	}
	mark = min(mark, l.hi.Load())
	n, err := s.pager.count(s.ctx, pos, mark)
	if err == nil {
		s.tally.skipped.Add(n)
		s.tally.note(fmt.Sprintf("%s resumed %s at id %d, the sink's watermark; the coordinator's was %d: %d rows not replayed",
			s.worker, l.split, mark, pos, n))
	}
	l.acked.Store(mark)
	return mark
}

// ValidateResume accepts carried progress only if its watermark lies inside
// the split's key range.
func (s *source) ValidateResume(spec coordination.SplitSpec, p coordination.SplitProgress) error {
	keys, err := decodeRange(spec.ID, spec.Descriptor, s.pager.t.name)
	if err != nil {
		return err
	}
	if p.Watermark < keys.Lo || p.Watermark > keys.Hi {
		return fmt.Errorf("split %s: resume watermark %d is outside its ids %s", spec.ID, p.Watermark, keys)
	}
	return nil
}

// EncodeCommit snapshots the split's progress at watermark. It is Completed
// only when the whole range is in the sink and the split is not draining.
func (s *source) EncodeCommit(split coordination.SplitID, watermark int64) (coordination.SplitProgress, error) {
	l := s.lanes[split]
	if l == nil {
		return coordination.SplitProgress{}, fmt.Errorf("split %s: commit for a split that is not open", split)
	}
	hi := l.hi.Load()
	if watermark < l.keys.Lo || watermark > hi {
		return coordination.SplitProgress{}, fmt.Errorf("split %s: watermark %d is outside its ids %s", split, watermark, idRange{Table: l.keys.Table, Lo: l.keys.Lo, Hi: hi})
	}
	s.mu.Lock() // so that killWhileAhead decides on a settled encoded
	l.encoded.Store(watermark)
	s.mu.Unlock()
	return coordination.SplitProgress{Watermark: watermark, Completed: watermark == hi && !l.draining.Load()}, nil
}

// sinkAhead returns how many of the lanes still reading have pages with
// rows in the sink beyond the last watermark handed to the coordinator (a
// page of ids with no rows spares a successor nothing), and how long ago
// the last commit round started: a worker killed then leaves its successors
// rows the sink's watermark spares them. Safe from any goroutine.
func (s *source) sinkAhead() (lanes int, sinceRound time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sinkAheadLocked()
}

// killWhileAhead runs kill when now is the moment (at(lanes, sinceRound),
// as sinkAhead counts them), holding the lock EncodeCommit stores under: no
// commit round can take the pages past the last commit in between, so the
// kill leaves them to the successors. It returns the lanes and whether it
// killed.
func (s *source) killWhileAhead(at func(lanes int, sinceRound time.Duration) bool, kill func()) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lanes, since := s.sinkAheadLocked()
	if !at(lanes, since) {
		return lanes, false
	}
	kill()
	return lanes, true
}

func (s *source) sinkAheadLocked() (lanes int, sinceRound time.Duration) {
	for l := range s.reading {
		if l.filled.Load() > l.encoded.Load() && !l.draining.Load() {
			lanes++ // a page with rows lies past the last commit
		}
	}
	return lanes, time.Since(time.Unix(0, s.roundAt.Load()))
}

// Sweep returns completed progress for an open lane whose whole range is
// acknowledged (an empty range, a split resumed at its end, or one whose
// completed commit did not confirm), else nil.
func (s *source) Sweep(split coordination.SplitID) (*coordination.SplitProgress, error) {
	l := s.lanes[split]
	if l == nil || l.draining.Load() || l.acked.Load() < l.hi.Load() {
		return nil, nil
	}
	return &coordination.SplitProgress{Watermark: l.hi.Load(), Completed: true}, nil
}

// CloseSplit halts the split's reader without waiting for it; StopLanes
// waits. It tolerates a split that was never opened.
func (s *source) CloseSplit(split coordination.SplitID) {
	if l := s.lanes[split]; l != nil {
		l.halt()
		delete(s.lanes, split)
		s.open.Store(int64(len(s.lanes)))
		s.mu.Lock()
		delete(s.reading, l) // its tenancy is over: a kill now spares no successor anything
		s.mu.Unlock()
	}
}

// TakeFinishing returns the splits whose lanes reached the end of their range
// since the last call.
func (s *source) TakeFinishing() []coordination.SplitID {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.finishing
	s.finishing = nil
	return out
}

// BeginRevoke stops the lane's intake after its current page; every page
// written by then is acknowledged, so the cut replays nothing. It refuses a
// split that is not open or already complete.
func (s *source) BeginRevoke(split coordination.SplitID) bool {
	l := s.lanes[split]
	if l == nil || l.acked.Load() >= l.hi.Load() {
		return false
	}
	l.draining.Store(true)
	return true
}

// DrainReady returns the cut of a draining lane once its reader has stopped,
// and keeps returning it until the driver closes the split.
func (s *source) DrainReady(split coordination.SplitID) (*coordination.SplitProgress, error) {
	l := s.lanes[split]
	if l == nil || !l.draining.Load() || !l.quiet() {
		return nil, nil
	}
	return &coordination.SplitProgress{Watermark: l.acked.Load()}, nil
}

// crash ends every lane's I/O at once (an in-flight page transaction rolls
// back) as a dying process would. Safe to call from any goroutine.
func (s *source) crash() { s.kill() }

// waitReaders blocks until every reader this source started has exited.
func (s *source) waitReaders() { s.readers.Wait() }
