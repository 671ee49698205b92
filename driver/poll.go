package driver

import (
	"slices"
	"time"

	"github.com/spate-go/coordination"
)

// PollEvents returns the next event for the control loop, one per call. It
// loops internally: staged losses first ([LanesRevoked]), then retirements
// ([LanesRetired]), then newly opened lanes ([LanesAdded]), then the job's
// terminal state ([Drained], or the stall error); otherwise it polls the
// coordinator, applies every event of the batch, sweeps completed splits and
// advances drains, and loops again without parking if that staged anything.
// With nothing staged it returns [CommitReady] for lanes that reached end of
// input, or [Idle] at once when the batch brought a cut request (for
// [Driver.Cut]), or else parks on the Waker for at most timeout (any wake
// ends the park; timeout <= 0 does not park) and returns [Idle].
//
// Errors from the coordinator and the source are returned unchanged; a
// Retryable one is recoverable (keep polling), anything else ends the run.
// Before Start it returns Fatal "driver used before Start"; after Shutdown,
// Fatal "driver is shut down".
func (d *Driver) PollEvents(timeout time.Duration) (Event, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	for {
		if ev, err := d.staged(); ev != nil || err != nil {
			return ev, err
		}
		events, err := d.c.Poll()
		if applyErr := d.apply(events); err == nil {
			err = applyErr
		}
		if err != nil {
			return nil, err
		}
		if err := d.sweep(); err != nil {
			return nil, err
		}
		if err := d.advanceDrains(); err != nil {
			return nil, err
		}
		if d.anythingStaged() {
			continue
		}
		if parts := d.finishing(); len(parts) > 0 {
			return CommitReady{Partitions: parts}, nil
		}
		if d.asked {
			// A cut request was polled: return at once so the caller acts
			// on it (Run calls Cut after every poll); a park would hold it
			// until the next wake or the end of the commit interval.
			d.asked = false
			return Idle{}, nil
		}
		d.park(timeout)
		return Idle{}, nil
	}
}

// staged runs steps 1 to 5 of a poll: it returns the first staged event, an
// open error, or the terminal outcome, or (nil, nil) when nothing is staged.
func (d *Driver) staged() (Event, error) {
	if len(d.lost) > 0 {
		ev := LanesRevoked{Lanes: d.lost}
		d.lost = nil
		return ev, nil
	}
	if len(d.retired) > 0 {
		ev := LanesRetired{Lanes: d.retired}
		d.retired = nil
		return ev, nil
	}
	d.pruneRetired()
	if len(d.added) == 0 && len(d.toOpen) > 0 {
		if err := d.openStaged(); err != nil {
			return nil, err
		}
	}
	if len(d.added) > 0 {
		ev := LanesAdded{Lanes: d.added}
		d.added = nil
		return ev, nil
	}
	return d.terminal()
}

// terminal returns the sticky outcome of a job that reached its verdict, or
// (nil, nil).
func (d *Driver) terminal() (Event, error) {
	if s := d.stalled; s != nil {
		if !d.drainOnStall {
			return nil, (&StalledError{Completed: s.Completed, Quarantined: s.Quarantined}).fatal()
		}
		if !d.stallWarned {
			d.stallWarned = true
			d.log.Warn("job stalled; ending as drained (WithDrainOnStall)", "completed", s.Completed, "quarantined", s.Quarantined)
		}
		return Drained{}, nil
	}
	if d.complete {
		return Drained{}, nil
	}
	return nil, nil
}

// anythingStaged reports whether the next pass of staged would return.
func (d *Driver) anythingStaged() bool {
	for _, t := range d.toOpen {
		if t.phase != retired {
			return true
		}
	}
	return len(d.lost) > 0 || len(d.retired) > 0 || len(d.added) > 0 || d.stalled != nil || d.complete
}

// finishing maps the source's end-of-input edges to held partitions.
func (d *Driver) finishing() []PartitionID {
	var parts []PartitionID
	for _, id := range d.src.TakeFinishing() {
		t, ok := d.held[id]
		if !ok {
			continue
		}
		if !slices.Contains(parts, t.partition) {
			parts = append(parts, t.partition)
		}
	}
	return parts
}

// park waits for a wake or for timeout, whichever comes first.
func (d *Driver) park(timeout time.Duration) {
	if timeout <= 0 {
		return
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-d.waker.C():
	case <-timer.C:
	}
}

// apply applies every event of a batch, even when one fails, and returns the
// first error; a later Fatal replaces a kept non-fatal one.
func (d *Driver) apply(events []coordination.Event) error {
	var kept error
	// ended holds, per split, the last durable commit of a tenancy this
	// batch ended, for the catch-up rule of onGained.
	var ended map[coordination.SplitID]*coordination.SplitProgress
	end := func(t *tenancy) {
		if t.landed != nil {
			if ended == nil {
				ended = make(map[coordination.SplitID]*coordination.SplitProgress)
			}
			ended[t.id()] = t.landed
		}
	}
	keep := func(err error) {
		if err == nil {
			return
		}
		if kept == nil || (coordination.KindOf(err) == coordination.Fatal && coordination.KindOf(kept) != coordination.Fatal) {
			kept = err
		}
	}
	for _, ev := range events {
		switch ev := ev.(type) {
		case coordination.Gained:
			d.onGained(ev, ended[ev.Split.ID], end, keep)
		case coordination.RevokeRequested:
			keep(d.onRevokeRequested(ev.Split))
		case coordination.CutRequested:
			d.onCutRequested(ev)
		case coordination.Lost:
			if t, ok := d.held[ev.Split]; ok {
				t.fenced = true
				end(t)
				d.retire(t)
			}
		case coordination.Quarantined:
			d.log.Warn("split quarantined", "split", ev.Split, "attempts", ev.Attempts)
			if t, ok := d.held[ev.Split]; ok {
				t.fenced = true
				d.retire(t)
			}
		case coordination.AllComplete:
			if !d.everHeld {
				d.log.Info("job completed before this worker held any split")
			}
			d.complete = true
		case coordination.Stalled:
			s := ev
			d.stalled = &s
		}
	}
	return kept
}

// onGained creates a tenancy for g, after retiring a duplicate and
// validating carried progress; a rejected resume is reported as poison
// (Fail) and logged, and only a Fail error that leaves the split here is
// kept.
//
// Catch-up: Commit names no epoch, so when the coordinator ends a tenancy and
// re-claims the split for this worker before the driver polls the Lost, the
// embedder's commits of the old lane land on the new tenancy after the
// Gained's progress was taken. The Lost and the Gained then arrive in one
// batch, and the record is ahead of the carried progress. previous is the
// last durable commit of a tenancy of the split that this batch ended; when
// it is ahead of the carried progress, the new tenancy resumes from it, so
// the lane neither replays those records nor commits a watermark below the
// record's. A commit that landed under the old epoch is already included in
// the carried progress, so this changes nothing then.
func (d *Driver) onGained(g coordination.Gained, previous *coordination.SplitProgress, end func(*tenancy), keep func(error)) {
	if old, ok := d.held[g.Split.ID]; ok {
		d.log.Warn("duplicate gain for a held split; closing the old tenancy", "split", g.Split.ID, "epoch", g.Epoch)
		end(old)
		if old.landed != nil {
			previous = old.landed
		}
		d.retire(old)
	}
	if previous != nil && (g.Progress == nil || previous.Watermark > g.Progress.Watermark) {
		d.log.Warn("gained progress is behind this worker's last commit of the split; resuming from that commit", "split", g.Split.ID, "epoch", g.Epoch)
		g.Progress = previous
	}
	if g.Progress != nil {
		if err := d.src.ValidateResume(cloneSpec(g.Split), *cloneProgressPtr(g.Progress)); err != nil {
			// Poison (Source.ValidateResume): the split is failed, charged an
			// attempt, and the run goes on; only a Fail the coordinator could
			// not take is an error of the poll.
			d.log.Warn("resume progress rejected; reporting the split as failed (poison)", "split", g.Split.ID, "epoch", g.Epoch, "err", err)
			if ferr := d.c.Fail(g.Split.ID, g.Epoch, "resume progress rejected: "+err.Error()); !leftWorker(ferr) {
				keep(ferr)
			}
			return
		}
	}
	d.gain(g)
}

// leftWorker reports whether a Fail answer means the split has left this
// worker: nil, Fenced and Retryable all do.
func leftWorker(err error) bool {
	switch coordination.KindOf(err) {
	case coordination.Fenced, coordination.Retryable:
		return true
	}
	return err == nil
}
