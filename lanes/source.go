package lanes

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
)

// ReadFunc reads one lane: from [Lane.Next] (or after [Lane.Last]) onward,
// in position order, claiming each record's position (or a batch's last)
// with [Lane.Claim] before processing it, and returning nil once a claim
// returns false or its input ends. ctx ends when the lane is stopped (a
// forced move, a shutdown); a read blocked on I/O should honour it.
//
// A returned error leaves the records of the last claim unacknowledged:
// the kit calls the function again from there after a pause (1/10 s,
// doubling up to 5 s), and after [Options.Retries] failures in a row with
// nothing claimed reports the split as poison with the error's text. An
// error wrapped by [Poison] reports the split as poison at once.
type ReadFunc[P Position] func(ctx context.Context, lane *Lane[P]) error

// Options tune a [Source]; the zero value is the defaults.
type Options struct {
	// Retries is how many read errors in a row, with nothing claimed
	// between them, make a split poison. 0 means 3; negative means never
	// (every error is retried).
	Retries int
	// MinResidual is the fewest positions a runtime cut may leave the
	// residual of an offset lane, so that a cut never moves a handful of
	// records. 0 means 2. Key ranges have no count; the leader's
	// Config.MinCutWeight bounds their cuts by weight.
	MinResidual uint64
	// Logger receives the kit's warnings (retried read errors, refused
	// resumes). nil means slog.Default().
	Logger *slog.Logger
	// NoCut, when set, is asked with a split's Meta whether its lanes must
	// never be cut at runtime (a compressed file read whole): TrySplit
	// refuses them. nil means every lane may be cut.
	NoCut func(meta []byte) bool
}

// Source runs the lanes of one worker: it is the [driver.SourceReader]
// (with [driver.Pauser], [driver.Splitter] and [driver.PoisonReporter]) that
// [driver.Run] takes, over a [ReadFunc]. Make one with [NewSource]; it is
// used by one Run.
type Source[P Position] struct {
	k    kind[P]
	read ReadFunc[P]
	opts Options
	log  *slog.Logger

	mu        sync.Mutex
	splits    map[coordination.SplitID]*laneRun[P] // guarded by mu: OpenSplit until CloseSplit
	lanes     map[driver.LaneID]*laneRun[P]        // guarded by mu: StartLanes until StopLanes
	finishing []coordination.SplitID               // guarded by mu: for TakeFinishing
	poisoned  []driver.Poisoned                    // guarded by mu: for TakePoisoned
}

var (
	_ driver.SourceReader   = (*Source[int64])(nil)
	_ driver.Pauser         = (*Source[int64])(nil)
	_ driver.Splitter       = (*Source[[]byte])(nil)
	_ driver.PoisonReporter = (*Source[[]byte])(nil)
)

// NewSource returns a source that reads every lane with read.
func NewSource[P Position](read ReadFunc[P], opts Options) *Source[P] {
	if opts.Retries == 0 {
		opts.Retries = 3
	}
	if opts.MinResidual == 0 {
		opts.MinResidual = 2
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Source[P]{
		k: kindOf[P](), read: read, opts: opts, log: log,
		splits: map[coordination.SplitID]*laneRun[P]{},
		lanes:  map[driver.LaneID]*laneRun[P]{},
	}
}

// laneRun is a lane with the kit's own state around it: its reader
// goroutine and what Acked reported.
type laneRun[P Position] struct {
	Lane[P]
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the reader returned; nil until started

	reported map[int64]mark[P] // the driver's goroutine only: marks Acked reported, by watermark
}

// OpenSplit builds the lane of a gained split from its descriptor and
// resume progress; reading starts at StartLanes.
func (s *Source[P]) OpenSplit(o driver.Opening) error {
	d, m, err := s.decode(o.Split, o.Resume)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &laneRun[P]{ctx: ctx, cancel: cancel, reported: map[int64]mark[P]{}}
	r.k, r.split, r.partition, r.waker = s.k, o.Split.ID, o.Partition, o.Waker
	r.start, r.meta, r.end, r.weight = d.rng.Start, d.meta, d.rng.End, d.weight
	r.epoch = o.Epoch
	if o.Resume != nil {
		// The driver may encode the resume point itself (a cut before any
		// ack); a copy, since the lane's marks reuse their memory.
		r.reported[o.Resume.Watermark] = m.copyInto(s.k, mark[P]{})
	}
	r.acked, r.pending = m, m.copyInto(s.k, mark[P]{})
	r.wake = make(chan struct{})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.splits[o.Split.ID] = r
	return nil
}

// ValidateResume checks that progress fits the split's descriptor.
func (s *Source[P]) ValidateResume(spec coordination.SplitSpec, p coordination.SplitProgress) error {
	_, _, err := s.decode(spec, &p)
	return err
}

// decode reads spec's descriptor and the mark that resume (nil: a fresh
// split) stands for in its range; an error names the split.
func (s *Source[P]) decode(spec coordination.SplitSpec, resume *coordination.SplitProgress) (descriptor[P], mark[P], error) {
	var m mark[P]
	d, err := decodeDescriptor(s.k, spec.Descriptor)
	if err == nil && resume != nil {
		m, err = s.k.resume(*resume, d.rng)
	}
	if err != nil {
		return d, m, errorf("split %s: %v", spec.ID, err)
	}
	return d, m, nil
}

// EncodeCommit returns the progress Acked reported at watermark; it is
// completed when the lane had read its whole range then and is not
// draining.
func (s *Source[P]) EncodeCommit(split coordination.SplitID, watermark int64) (coordination.SplitProgress, error) {
	r := s.split(split)
	if r == nil {
		return coordination.SplitProgress{}, errorf("split %s: EncodeCommit of a split with no open lane", split)
	}
	m, ok := r.reported[watermark]
	if !ok {
		r.mu.Lock()
		rng := Range[P]{Start: r.start, End: r.end}
		r.mu.Unlock()
		var err error
		if m, err = s.k.resume(coordination.SplitProgress{Watermark: watermark}, rng); err != nil {
			return coordination.SplitProgress{}, errorf("split %s: watermark %d was never reported by Acked: %v", split, watermark, err)
		}
	}
	for w := range r.reported {
		if w < watermark {
			delete(r.reported, w)
		}
	}
	return r.progress(m), nil
}

// progress returns the committable progress of m: completed only for a
// lane done and not draining.
func (r *laneRun[P]) progress(m mark[P]) coordination.SplitProgress {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.k.progress(m, Range[P]{Start: r.start, End: r.end})
	p.Completed = m.done && !r.draining
	return p
}

// Sweep returns completed progress for a lane that read its whole range.
func (s *Source[P]) Sweep(split coordination.SplitID) (*coordination.SplitProgress, error) {
	r := s.split(split)
	if r == nil {
		return nil, nil
	}
	r.mu.Lock()
	m := r.acked.copyInto(r.k, mark[P]{})
	r.mu.Unlock()
	if !m.done {
		return nil, nil
	}
	p := r.progress(m)
	return &p, nil
}

// CloseSplit detaches the lane: its claims fail and its context ends; a
// running reader is waited for by StopLanes.
func (s *Source[P]) CloseSplit(split coordination.SplitID) {
	s.mu.Lock()
	r := s.splits[split]
	delete(s.splits, split)
	s.mu.Unlock()
	if r != nil {
		r.stop()
	}
}

// TakeFinishing returns the splits whose lanes read their whole range since
// the last call.
func (s *Source[P]) TakeFinishing() []coordination.SplitID {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.finishing
	s.finishing = nil
	return f
}

// TakePoisoned returns the splits whose reads failed for good since the
// last call.
func (s *Source[P]) TakePoisoned() []driver.Poisoned {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.poisoned
	s.poisoned = nil
	return p
}

// BeginRevoke makes the lane's next claim fail, so its reader returns at a
// claim boundary; false for a lane not open, stopped, or read whole (the
// driver then commits its completion, which Sweep reports, instead of a
// drain cut).
func (s *Source[P]) BeginRevoke(split coordination.SplitID) bool {
	r := s.split(split)
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || r.acked.done {
		return false
	}
	r.draining = true
	r.wakeLocked()
	return true
}

// DrainReady returns the lane's progress once its reader has returned (or
// never started): everything claimed is processed then.
func (s *Source[P]) DrainReady(split coordination.SplitID) (*coordination.SplitProgress, error) {
	r := s.split(split)
	if r == nil {
		return nil, nil
	}
	s.mu.Lock()
	done := r.done
	s.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		default:
			return nil, nil
		}
	}
	r.mu.Lock()
	m := r.acked.copyInto(r.k, mark[P]{})
	r.mu.Unlock()
	p := r.progress(m)
	p.Completed = false
	return &p, nil
}

// StartLanes starts a reader goroutine per lane.
func (s *Source[P]) StartLanes(lanes []driver.Lane) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, dl := range lanes {
		r := s.splits[dl.Split.ID]
		if r == nil || r.done != nil {
			continue
		}
		r.done = make(chan struct{})
		s.lanes[dl.ID] = r
		go s.run(r)
	}
}

// StopLanes stops the lanes' readers (their claims fail, their context
// ends) and returns once each has returned.
func (s *Source[P]) StopLanes(ids []driver.LaneID) {
	s.mu.Lock()
	var stopping []*laneRun[P]
	for _, id := range ids {
		if r := s.lanes[id]; r != nil {
			delete(s.lanes, id)
			stopping = append(stopping, r)
		}
	}
	s.mu.Unlock()
	for _, r := range stopping {
		r.stop()
		<-r.done
	}
}

// Acked returns the acknowledged watermark of every open lane (where it
// opened, until it acknowledges more: a cut needs a watermark to commit).
func (s *Source[P]) Acked() []driver.Watermark {
	s.mu.Lock()
	runs := make([]*laneRun[P], 0, len(s.splits))
	for _, r := range s.splits {
		runs = append(runs, r)
	}
	s.mu.Unlock()
	ws := make([]driver.Watermark, 0, len(runs))
	for _, r := range runs {
		r.mu.Lock()
		m := r.acked.copyInto(r.k, mark[P]{})
		rng := Range[P]{Start: r.start, End: r.end}
		r.mu.Unlock()
		w := r.k.progress(m, rng).Watermark
		r.reported[w] = m
		ws = append(ws, driver.Watermark{Partition: r.partition, Value: w})
	}
	return ws
}

// PauseLanes makes the lanes' claims wait until ResumeLanes.
func (s *Source[P]) PauseLanes(ids []driver.LaneID) {
	for _, r := range s.running(ids) {
		r.mu.Lock()
		if r.paused == nil {
			r.paused = make(chan struct{})
		}
		r.mu.Unlock()
	}
}

// ResumeLanes lets paused claims go on.
func (s *Source[P]) ResumeLanes(ids []driver.LaneID) {
	for _, r := range s.running(ids) {
		r.mu.Lock()
		if r.paused != nil {
			close(r.paused)
			r.paused = nil
		}
		r.mu.Unlock()
	}
}

// split returns the open lane of split, or nil.
func (s *Source[P]) split(split coordination.SplitID) *laneRun[P] {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.splits[split]
}

// running returns the started lanes among ids.
func (s *Source[P]) running(ids []driver.LaneID) []*laneRun[P] {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rs []*laneRun[P]
	for _, id := range ids {
		if r := s.lanes[id]; r != nil {
			rs = append(rs, r)
		}
	}
	return rs
}

// stop makes r's claims fail and ends its context.
func (r *laneRun[P]) stop() {
	r.mu.Lock()
	r.stopped = true
	r.wakeLocked()
	r.mu.Unlock()
	r.cancel()
}

// wakeLocked ends a paused claim's wait, so it sees a stop or a drain.
func (r *Lane[P]) wakeLocked() {
	close(r.wake)
	r.wake = make(chan struct{})
}

// retryPause returns the pause before the n'th retry of a failed read.
func retryPause(n int) time.Duration {
	return min(100*time.Millisecond<<min(n, 6), 5*time.Second)
}
