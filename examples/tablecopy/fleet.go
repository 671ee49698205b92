package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spate-go/coordination/internal/examplekit"
)

// progressEvery is how often the run prints a progress line.
const progressEvery = time.Second

// workerExit is how one worker's run ended.
type workerExit struct {
	w   *worker
	err error
}

// fleet runs this process's workers and the kill and late join.
type fleet struct {
	setup   workerSetup
	plan    planner
	workers []*worker
	exits   chan workerExit // every started worker sends once; capacity covers them all
	running int
}

// start builds worker name and runs it on its own goroutine.
func (f *fleet) start(ctx context.Context, name string) error {
	w, err := newWorker(name, f.setup)
	if err != nil {
		return err
	}
	f.workers = append(f.workers, w)
	f.running++
	go func() { f.exits <- workerExit{w: w, err: w.run(ctx, f.plan)} }()
	return nil
}

// run starts the workers, adds the late one at its threshold and kills one
// once past its threshold (see victim), prints progress, and returns once
// every worker has ended, with the failures of the workers not killed.
func (f *fleet) run(ctx context.Context, o *options, rep *report, tl *tally) error {
	var errs []error
	for _, name := range o.Names(o.workers) {
		if err := f.start(ctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	joinAt, killAt := int64(o.joinAt*float64(rep.rows)), int64(o.killAt*float64(rep.rows))
	joined, killed := o.Instance != "" || o.joinAt == 0, o.Instance != "" || o.killAt == 0
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastLine, lastWritten := time.Now(), int64(0)
	for f.running > 0 {
		select {
		case e := <-f.exits:
			f.running--
			if e.err != nil {
				errs = append(errs, e.err)
			}
			continue
		case <-tick.C:
		}
		written := tl.written.Load()
		if !joined && written >= joinAt {
			joined = true
			name := fmt.Sprintf("w%d", len(f.workers)+1)
			if err := f.start(ctx, name); err != nil {
				errs = append(errs, err)
			} else {
				rep.joined = name
				tl.note(fmt.Sprintf("JOIN: %s starts at %s copied", name, percent(written, rep.rows)))
			}
		}
		if !killed && written >= killAt {
			if v, _ := f.victim(); v != nil {
				lanes := v.src.open.Load()
				// A commit round that began since victim looked waits the kill for the next moment.
				if ahead, ok := v.src.killWhileAhead(killMoment, v.kill); ok {
					killed = true
					rep.killed = v.name
					tl.note(fmt.Sprintf("KILL: %s aborted at %s copied, holding %s, %d with pages in the sink past their last commit; its leases expire within %s",
						v.name, percent(written, rep.rows), examplekit.Count(lanes, "split"), ahead, leaseDuration))
				}
			}
		}
		if now := time.Now(); now.Sub(lastLine) >= progressEvery {
			rate := float64(written-lastWritten) / now.Sub(lastLine).Seconds()
			tl.note(fmt.Sprintf("copied %d/%d rows (%s), %.0f rows/s", written, rep.rows, percent(written, rep.rows), rate))
			lastLine, lastWritten = now, written
		}
	}
	for _, w := range f.workers {
		rep.states = append(rep.states, workerState{name: w.name, state: stateName(w.state.Load())})
	}
	return errors.Join(errs...)
}

// killWindow is where in the commit interval a kill leaves a worker's sink
// ahead of what its coordinator holds: after the last commit round's writes
// have landed (they take milliseconds) and before the next round starts.
const killWindowStart, killWindowEnd = commitEvery * 3 / 10, commitEvery * 8 / 10

// killMoment reports whether a worker whose sink is ahead of its last
// commit in lanes lanes, sinceRound after its last commit round began, is
// at the moment to kill.
func killMoment(lanes int, sinceRound time.Duration) bool {
	return lanes > 0 && sinceRound >= killWindowStart && sinceRound < killWindowEnd
}

// victim returns the running worker to kill now: the one with the most
// lanes whose sink is ahead of their last commit, in the middle of its
// commit interval, so the kill shows what the sink's watermark is for (its
// successors skip those rows, or the sink absorbs them). It returns nil
// while no worker is at such a point; ahead is the victim's count of such
// lanes.
func (f *fleet) victim() (v *worker, ahead int) {
	for _, w := range f.workers {
		if w.state.Load() != stateRunning {
			continue
		}
		lanes, since := w.src.sinkAhead()
		if killMoment(lanes, since) && lanes > ahead {
			v, ahead = w, lanes
		}
	}
	return v, ahead
}

// percent renders n/of as a percentage.
var percent = examplekit.Percent
