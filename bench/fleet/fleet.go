package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spate-go/coordination/store"
)

// pollEvery is how often a wait re-checks its condition.
const pollEvery = 20 * time.Millisecond

// fleet is the workers of one job, their shared planner, and when and by
// whom the plan was published (the first landed Update of the plan record
// after the planner returned, seen by any worker's decorator).
type fleet struct {
	env       *env
	job       string
	plan      *planner
	workers   []*worker
	started   time.Time
	cpu0      time.Duration // the process's CPU time at started
	published atomic.Int64  // unix nanoseconds; 0 before
	publisher atomic.Int64  // index+1 of the worker that published; 0 before
	hook      atomic.Pointer[func(i int, w write)]
}

// startFleet starts one worker per spec on a fresh job of n splits.
func startFleet(e *env, job string, n int, specs []workerSpec) (*fleet, error) {
	f := &fleet{env: e, job: job, plan: &planner{n: n, job: job}, started: time.Now(), cpu0: cpuTime()}
	for i, ws := range specs {
		if err := f.add(ws); err != nil {
			f.stop()
			return nil, fmt.Errorf("starting worker %d: %w", i, err)
		}
	}
	return f, nil
}

// add starts one more worker on the fleet's job.
func (f *fleet) add(ws workerSpec) error {
	w, err := startWorker(f.env, f.job, ws, f.plan)
	if err != nil {
		return err
	}
	i := len(f.workers)
	w.st.setTap(func(wr write) { f.observe(i, wr) })
	f.workers = append(f.workers, w)
	return nil
}

// observe sees every write of worker i: it notes the plan's publication and
// passes the write to the figure's hook, if any.
func (f *fleet) observe(i int, wr write) {
	if wr.ks == store.Durable && wr.op == opUpdate && isPlanKey(wr.key) && wr.ok {
		if r := f.plan.returnedAt(); !r.IsZero() && wr.start.After(r) {
			if f.published.CompareAndSwap(0, wr.end.UnixNano()) {
				f.publisher.Store(int64(i) + 1)
			}
		}
	}
	if h := f.hook.Load(); h != nil {
		(*h)(i, wr)
	}
}

// isPlanKey reports whether key is the plan record's: "plan", or "plan"
// under a family prefix ("job.plan" since docs/protocol.md).
func isPlanKey(key string) bool { return key == "plan" || strings.HasSuffix(key, ".plan") }

// setHook installs h for every later write (nil removes it).
func (f *fleet) setHook(h func(i int, w write)) {
	if h == nil {
		f.hook.Store(nil)
		return
	}
	f.hook.Store(&h)
}

// publishedAt is when the plan was published (zero before).
func (f *fleet) publishedAt() time.Time {
	return unixNanos(f.published.Load())
}

// held is the number of splits held across the fleet.
func (f *fleet) held() int {
	n := 0
	for _, w := range f.workers {
		n += int(w.heldN.Load())
	}
	return n
}

// counts returns the splits each worker holds, in start order.
func (f *fleet) counts() []int {
	n := make([]int, len(f.workers))
	for i, w := range f.workers {
		n[i] = int(w.heldN.Load())
	}
	return n
}

// ended is the number of held splits that left a worker (Lost or
// RevokeRequested) across the fleet.
func (f *fleet) ended() int {
	n := 0
	for _, w := range f.workers {
		n += int(w.ended.Load())
	}
	return n
}

// firstGains returns, relative to the fleet's start, when the earliest and
// the latest of its workers gained their first split (zero for none).
func (f *fleet) firstGains() (earliest, latest time.Duration) {
	return f.span(func(w *worker) time.Time { return unixNanos(w.firstGained.Load()) })
}

// startsAndLoads returns, relative to the fleet's start, when the earliest
// and the latest of its workers' Start returned and when the earliest and
// the latest of them had every watch's snapshot delivered.
func (f *fleet) startsAndLoads() (startA, startZ, loadA, loadZ time.Duration) {
	startA, startZ = f.span(func(w *worker) time.Time { return w.startedAt })
	loadA, loadZ = f.span(func(w *worker) time.Time { return unixNanos(w.st.loadedAt.Load()) })
	return startA, startZ, loadA, loadZ
}

// unixNanos is the time of unix nanoseconds ns, the zero time for 0.
func unixNanos(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// span returns, relative to the fleet's start, the earliest and the latest
// of at(w) over its workers, skipping the zero times.
func (f *fleet) span(at func(w *worker) time.Time) (earliest, latest time.Duration) {
	earliest = -1
	for _, w := range f.workers {
		t := at(w)
		if t.IsZero() {
			continue
		}
		d := t.Sub(f.started)
		if earliest < 0 || d < earliest {
			earliest = d
		}
		latest = max(latest, d)
	}
	return max(earliest, 0), latest
}

// work returns the process CPU since the fleet started (the embedded
// server's included) and the watch events its workers were delivered, and
// describes them as "CPU X s, Y us per watch event per worker".
func (f *fleet) work() string {
	cpu := cpuTime() - f.cpu0
	var events int64
	for _, w := range f.workers {
		events += w.st.events.Load()
	}
	per := 0.0
	if events > 0 {
		per = float64(cpu.Microseconds()) / float64(events)
	}
	return fmt.Sprintf("CPU %s, %.1f us per watch event per worker (%d events)", secs(cpu), per, events)
}

// lastChange is the latest Gained or Lost across the fleet.
func (f *fleet) lastChange() time.Time {
	var ns int64
	for _, w := range f.workers {
		ns = max(ns, w.changed.Load())
	}
	return time.Unix(0, ns)
}

// failed returns the first worker failure, or nil.
func (f *fleet) failed() error {
	var errs []error
	for _, w := range f.workers {
		errs = append(errs, w.failed())
	}
	return errors.Join(errs...)
}

// wait polls cond until it holds, a worker fails, or ctx ends (then a
// timeout error saying what was awaited and how far it got).
func (f *fleet) wait(ctx context.Context, what string, cond func() bool, progress func() string) error {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for !cond() {
		if err := f.failed(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return &timeoutError{what: what, after: time.Since(f.started), progress: progress()}
		case <-t.C:
		}
	}
	return nil
}

// waitHeld waits until n splits are held and no split has been gained or
// lost for quiet.
func (f *fleet) waitHeld(ctx context.Context, n int, quiet time.Duration) error {
	progress := func() string { return fmt.Sprintf("%d of %d splits held", f.held(), n) }
	if err := f.wait(ctx, "every split held", func() bool { return f.held() >= n }, progress); err != nil {
		return err
	}
	return f.wait(ctx, "the fleet settled", func() bool {
		return f.held() >= n && time.Since(f.lastChange()) >= quiet
	}, progress)
}

// waitPublished waits for the plan's publication.
func (f *fleet) waitPublished(ctx context.Context) error {
	return f.wait(ctx, "the plan published", func() bool { return !f.publishedAt().IsZero() },
		func() string { return "planner returned: " + fmt.Sprint(!f.plan.returnedAt().IsZero()) })
}

// setCommitting switches every worker's commit loop.
func (f *fleet) setCommitting(on bool) {
	for _, w := range f.workers {
		w.setCommitting(on)
	}
}

// stop stops every worker and removes the job's buckets.
func (f *fleet) stop() error {
	for _, w := range f.workers {
		w.stop()
	}
	return f.env.dropJob(f.job)
}

// timeoutError is a figure that did not finish within -timeout (or was
// interrupted).
type timeoutError struct {
	what     string
	after    time.Duration // how long the fleet (or the idle window) had run
	progress string
}

// Error says what did not happen, after how long, and how far it got.
func (e *timeoutError) Error() string {
	return fmt.Sprintf("timeout after %s waiting for %s (%s)", e.after.Round(time.Second), e.what, e.progress)
}
