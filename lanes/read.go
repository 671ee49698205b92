package lanes

import (
	"errors"
	"fmt"
	"time"

	"github.com/spate-go/coordination/driver"
)

// run is a lane's reader goroutine: it calls the read function until the
// lane's range is read, the lane stops or drains, or the split is poison.
func (s *Source[P]) run(r *laneRun[P]) {
	defer close(r.done)
	r.mu.Lock()
	resumedDone := r.acked.done
	r.mu.Unlock()
	if resumedDone { // resumed at a drain cut at its end: nothing left to read
		s.finished(r)
		return
	}
	failures := 0
	for {
		r.mu.Lock()
		cuts, seq := r.cuts, r.acked.seq
		r.mu.Unlock()
		err := s.read(r.ctx, &r.Lane)
		r.mu.Lock()
		if err == nil && r.badClaim != nil {
			err = r.badClaim
		}
		if err == nil {
			r.acked = r.pending.copyInto(r.k, r.acked) // the last claim is processed
		} else {
			r.pending = r.acked.copyInto(r.k, r.pending) // the last claim replays
		}
		switch {
		case r.stopped || r.draining:
			r.mu.Unlock()
			return
		case err == nil && r.cuts != cuts:
			r.mu.Unlock() // a cut moved the end during the read: read up to the new end
			continue
		case err == nil:
			r.acked.done, r.pending.done = true, true
			r.acked.seq++
			r.pending.seq = r.acked.seq
			r.mu.Unlock()
			s.finished(r)
			return
		}
		if r.acked.seq != seq {
			failures = 0 // it read something: a new run of failures
		}
		failures++
		r.mu.Unlock()
		var poison *poisonError
		if errors.As(err, &poison) || s.opts.Retries > 0 && failures >= s.opts.Retries {
			s.poison(r, err)
			return
		}
		s.log.Warn("lane read failed; retrying from its last claim", "split", r.split, "failures", failures, "err", err)
		select {
		case <-r.ctx.Done():
		case <-time.After(retryPause(failures)):
		}
	}
}

// finished records r's split for TakeFinishing and wakes the driver.
func (s *Source[P]) finished(r *laneRun[P]) {
	s.mu.Lock()
	s.finishing = append(s.finishing, r.split)
	s.mu.Unlock()
	r.waker.Wake()
}

// poison records r's split for TakePoisoned and wakes the driver.
func (s *Source[P]) poison(r *laneRun[P], err error) {
	s.mu.Lock()
	s.poisoned = append(s.poisoned, driver.Poisoned{Split: r.split, Reason: err.Error()})
	s.mu.Unlock()
	r.waker.Wake()
}

// Poison wraps err so that a [ReadFunc] returning it reports its split as
// poison at once, with err's text as the reason: for content that no retry
// can read (a malformed record, an object that changed since planning).
func Poison(err error) error { return &poisonError{err} }

// poisonError is an error [Poison] wrapped.
type poisonError struct{ err error }

func (p *poisonError) Error() string { return p.err.Error() }
func (p *poisonError) Unwrap() error { return p.err }

// errorf returns an error of the kit, its text prefixed "lanes: ".
func errorf(format string, args ...any) error {
	return fmt.Errorf("lanes: "+format, args...)
}
