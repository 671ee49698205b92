package driver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spate-go/coordination"
)

// retryPause is how long Run parks after a Retryable PollEvents error, so a
// persistent one (a source that cannot open a split yet) does not spin.
const retryPause = 100 * time.Millisecond

// Run is the whole control loop of one worker: it builds a [Driver] over c
// and src, starts c with the planner of [WithPlanner], and then, until the
// job is over for this worker or ctx ends, polls the driver, starts and
// stops the lanes through src's [Reader] methods, and commits their
// acknowledged watermarks every [WithCommitInterval] (and at once when a lane
// reaches end of input). It blocks until then and always ends with
// [Driver.Shutdown]: it stops every open lane, commits their last
// acknowledged watermarks as final and departs the job, so c must not be
// used afterwards.
//
// src is a [SourceReader]: a [Source] that also implements [Reader], checked
// by the compiler. Run hands ctx.Done() to c as its stop
// channel (so a [WithStop] option is overridden). Retryable errors are
// logged (see [WithLogger]) and the loop goes on; commits are sent only for
// lanes whose watermark advanced. When src also implements [Pauser], a lane
// whose commits have not landed for [WithPauseAfter] is paused until one of
// them lands, which bounds what a store outage leaves uncommitted. When src
// also implements [Splitter] and c coordination.Cutter, Run reports the
// lanes' remaining work every commit interval ([Driver.ReportRemaining])
// and acts on the leader's cut requests after every poll ([Driver.Cut]), so
// a fleet whose lanes run dry takes over part of a straggling split.
//
// The outcome is the error:
//   - nil when every split of the job completed (AllComplete);
//   - a [*StalledError] when the job stalled on quarantined splits (even
//     with [WithDrainOnStall]);
//   - a Retryable *coordination.Error wrapping ctx.Err() when ctx ended first
//     (errors.Is(err, context.Canceled) holds): run again to resume;
//   - the first Fatal or plain error of the coordinator or the source.
//
// A Shutdown failure (a final commit that did not land, a failed Depart) is
// joined to that outcome, except a Depart failure that only repeats it (a
// coordinator that failed returns its failure from Depart again): the
// failure is stated once. Bad options (no planner, a negative commit
// interval or pause window) return Fatal at once, before c is touched.
func Run(ctx context.Context, c coordination.Coordinator, src SourceReader, opts ...Option) error {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := checkRunOptions(&o); err != nil {
		return err
	}
	d := New(c, src, append(slices.Clip(opts), WithStop(ctx.Done()))...)
	defer context.AfterFunc(ctx, d.waker.Wake)() // a park ends when ctx does
	if err := ctx.Err(); err != nil {
		return joinOutcome(interrupted(err), d.shutdown(nil, nil))
	}
	if err := d.Start(o.planner); err != nil {
		return joinOutcome(err, d.shutdown(nil, err))
	}
	lr := &loop{d: d, r: src, interval: o.commitInterval, backlog: newBacklog(src, o.pauseAfter)}
	return lr.finish(lr.run(ctx))
}

// checkRunOptions checks what Run needs that the types cannot: a planner is
// set, the commit interval and the pause window are positive (0 means the
// default, which it fills in).
func checkRunOptions(o *options) error {
	if o.planner == nil {
		return fatal("driver.Run needs a planner; pass driver.WithPlanner(p)")
	}
	if o.commitInterval == 0 {
		o.commitInterval = DefaultCommitInterval
	}
	if o.commitInterval < 0 {
		return fatal(fmt.Sprintf("driver.WithCommitInterval %s must be positive; omit it for the default %s", o.commitInterval, DefaultCommitInterval))
	}
	if o.pauseAfter == 0 {
		o.pauseAfter = o.commitInterval
	}
	if o.pauseAfter < 0 {
		return fatal(fmt.Sprintf("driver.WithPauseAfter %s must be positive; omit it for the default of one commit interval (%s)", o.pauseAfter, o.commitInterval))
	}
	return nil
}

// loop is Run's state between its start and its Shutdown.
type loop struct {
	d        *Driver
	r        Reader
	interval time.Duration
	backlog  *backlog // lanes whose progress is not landing
}

// run polls until the job is over for this worker, ctx ends or an error ends
// the run, and returns the outcome (nil for AllComplete).
func (l *loop) run(ctx context.Context) error {
	next := time.Now().Add(l.interval)
	for {
		if err := ctx.Err(); err != nil {
			return interrupted(err)
		}
		wake := next
		if due := l.backlog.due(); !due.IsZero() && due.Before(wake) {
			wake = due
		}
		ev, err := l.d.PollEvents(time.Until(wake))
		if err != nil {
			if coordination.KindOf(err) != coordination.Retryable {
				return l.stalledOr(err)
			}
			l.d.log.Warn("poll failed; will retry", "err", err)
			l.d.park(retryPause)
			continue
		}
		switch ev := ev.(type) {
		case LanesAdded:
			l.r.StartLanes(ev.Lanes)
		case LanesRevoked:
			l.r.StopLanes(ev.Lanes)
		case LanesRetired:
			l.r.StopLanes(ev.Lanes)
		case CommitReady:
			if err := l.commit(ev.Partitions); err != nil {
				return err
			}
		case Drained:
			return l.stalledOr(nil) // WithDrainOnStall drains a stall too
		}
		if err := l.d.failPoisoned(l.r); err != nil {
			return err
		}
		if len(l.d.asks) > 0 {
			if _, err := l.d.Cut(l.r.Acked()); err != nil {
				return err
			}
		}
		if !time.Now().Before(next) {
			if err := l.commit(nil); err != nil {
				return err
			}
			l.d.ReportRemaining()
			next = time.Now().Add(l.interval)
		}
		l.throttle()
	}
}

// stalledOr returns a *StalledError when the job stalled, else err.
func (l *loop) stalledOr(err error) error {
	if s := l.d.stalled; s != nil {
		return &StalledError{Completed: s.Completed, Quarantined: s.Quarantined}
	}
	return err
}

// commit commits the acknowledged watermarks that advanced, of parts only
// when parts is not nil, one lane at a time: lanes whose progress is landing
// first, then the lagging ones, least recently tried first. The round ends
// at the first commit that does not land (Retryable, logged and swallowed:
// the next commit supersedes it), so an outage costs one store timeout per
// round, not one per lane; the lanes left untried count as lagging. Lanes
// whose progress landed, by this round or by another commit (a cut), are
// resumed if they were paused. Any other error is returned.
func (l *loop) commit(parts []PartitionID) error {
	var ws []Watermark
	var landed []PartitionID
	defer func() { l.resume(landed) }()
	for _, w := range mergeWatermarks(l.r.Acked()) {
		if parts != nil && !slices.Contains(parts, w.Partition) {
			continue
		}
		t, ok := l.d.parts[w.Partition]
		switch {
		case !ok || !t.committable():
		case !l.d.committed(t, w.Value):
			ws = append(ws, w)
		case l.backlog.caughtUp(w.Partition):
			// Another commit landed it (a cut's CommitCut, which carries
			// the acknowledged watermark): a lagging lane is caught up, and
			// a paused one must resume, or its next claim waits for a
			// commit this loop never makes.
			landed = append(landed, w.Partition)
		}
	}
	l.backlog.order(ws)
	for i, w := range ws {
		start := time.Now()
		err := l.d.Commit([]Watermark{w})
		if coordination.KindOf(err) == coordination.Retryable {
			l.d.log.Warn("commit failed; the next commit supersedes it", "err", err)
		} else if err != nil {
			return err
		}
		if t := l.d.parts[w.Partition]; err != nil || (t != nil && t.deferred) {
			l.backlog.failed(w.Partition, start)
			for _, rest := range ws[i+1:] {
				l.backlog.behind(rest.Partition, start)
			}
			return nil
		}
		if l.backlog.caughtUp(w.Partition) {
			landed = append(landed, w.Partition)
		}
	}
	return nil
}

// committed reports whether t's progress already stands at watermark, so
// committing it again would change nothing. A deferred progress is not
// durable, so it is committed again.
func (d *Driver) committed(t *tenancy, watermark int64) bool {
	return t.progress != nil && !t.deferred && t.progress.Watermark >= watermark
}

// finish stops every open lane (and those whose end is staged but not yet
// announced), shuts the driver down with their last acknowledged watermarks
// and returns outcome joined with Shutdown's error.
func (l *loop) finish(outcome error) error {
	lanes := slices.Concat(l.d.lost, l.d.retired)
	for _, a := range l.d.Assignments() {
		lanes = append(lanes, a.Lane)
	}
	if len(lanes) > 0 {
		l.r.StopLanes(lanes)
	}
	return joinOutcome(outcome, l.d.shutdown(l.r.Acked(), outcome))
}

// interrupted is Run's outcome when ctx ended before the job did.
func interrupted(cause error) error {
	return &coordination.Error{Kind: coordination.Retryable, Reason: "run interrupted before the job ended (" + cause.Error() + "); run again to resume", Err: cause}
}

// joinOutcome joins a run's outcome and its Shutdown error, returning either
// alone when the other is nil.
func joinOutcome(outcome, shutdown error) error {
	switch {
	case shutdown == nil:
		return outcome
	case outcome == nil:
		return shutdown
	}
	return errors.Join(outcome, shutdown)
}
