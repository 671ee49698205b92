package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// backfill runs the job and returns its report; an error means the run
// could not start (no report).
func backfill(ctx context.Context, o *options, stdout, stderr io.Writer) (rep *report, err error) {
	ds := datasetOf(o)
	plan := ds.planner()
	job := o.job
	if job == "" {
		job = jobName(plan)
	}
	st, err := openStores(o)
	if err != nil {
		return nil, err
	}
	if e := st.embedded; e != nil {
		defer func() {
			e.stop()
			if rep != nil && rep.Outcome == outcomeOK {
				_ = os.RemoveAll(e.dir) // the job is done: a rerun starts afresh
			} else if rep != nil {
				rep.Resume = "run again with -data " + e.dir + " to resume"
			}
		}()
	}
	lst, err := st.open(ledgerJob(job), false)
	if err != nil {
		return nil, err
	}
	sink, err := openLedger(ctx, lst)
	if err != nil {
		if hint := st.unreachableHint(); hint != "" && coordination.KindOf(err) == coordination.Retryable {
			return nil, fmt.Errorf("the job's ledger on %s: %w (%s)", st.where, err, hint)
		}
		return nil, fmt.Errorf("the job's ledger on %s: %w", st.where, err)
	}
	defer sink.close()

	out := &output{w: stdout, quiet: o.quiet}
	logger := newLogger(o.log, stderr)
	f := newFleet(out.note)
	names := []string{o.instance}
	if o.instance == "" {
		names = names[:0]
		for i := range o.workers {
			names = append(names, fmt.Sprintf("w%d", i+1))
		}
	}
	runID := randomHex(4)
	var workers []*worker
	for _, name := range names {
		w, err := newWorker(ctx, name, runID, o, func() (store.Store, error) { return st.open(job, false) }, sink, f, logger, plan)
		if err != nil {
			for _, w := range workers {
				_ = w.st.Close()
			}
			return nil, err
		}
		workers = append(workers, w)
	}

	before := tallyOf(ds, sink.snapshot())
	here := fmt.Sprintf("%d workers", len(workers))
	if len(workers) == 1 {
		here = "1 worker"
	}
	out.note(fmt.Sprintf("backfill pid %d (spate coordination v%s): %d records in %d splits, %s here",
		os.Getpid(), coordination.Version, o.records, len(ds.splits), here))
	out.note(fmt.Sprintf("job %q on %s", job, st.where))
	out.note(ds.describe())
	if before.deliveries > 0 {
		out.note(fmt.Sprintf("resuming: the ledger already holds %d of %d records", before.delivered, before.planned))
	}

	start := time.Now()
	out.start = start
	meter := &idleMeter{workers: workers, lanes: o.lanes, planned: ds.records - before.delivered}
	errs := runFleet(ctx, o, ds, sink, workers, f, st, out, meter)
	elapsed := time.Since(start)
	if err := sink.refresh(context.WithoutCancel(ctx)); err != nil {
		errs = append(errs, err)
	}
	timedOut := errors.Is(context.Cause(ctx), errTimeout)
	rep = newReport(o.instance, ds, tallyOf(ds, sink.snapshot()), workers, f, elapsed, errs, ctx.Err() != nil && !timedOut)
	rep.TailIdle = meter.idle
	rep.Ideal = time.Duration(float64(ds.records-before.delivered) / float64(int64(len(workers)*o.lanes)*o.pace) * float64(time.Second))
	if timedOut {
		rep.Errors = append(rep.Errors, fmt.Sprintf("gave up after -timeout %s", o.timeout))
		rep.Outcome = outcomeFailed
	}
	switch {
	case st.embedded != nil || rep.Outcome == outcomeInterrupted:
	case rep.Outcome == outcomeOK && o.instance == "":
		// A whole fleet completed the job: remove it, so a rerun starts
		// afresh.
		if err := st.removeJob(context.WithoutCancel(ctx), job); err != nil {
			fmt.Fprintf(stderr, "backfill: %v\n", err)
		}
	default:
		// A job of several processes (or one that failed) stays for
		// -verify and coordctl.
		rep.Kept = st.kept(job)
	}
	return rep, nil
}

// runFleet runs the workers, and the crash and the outage the flags ask
// for, until every worker's run returned; it returns the workers' errors.
func runFleet(ctx context.Context, o *options, ds *dataset, sink *ledger, workers []*worker, f *fleet, st *stores, out *output, meter *idleMeter) []error {
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Go(func() { errs[i] = w.runWorker() })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	delivered := func() int64 { return tallyOf(ds, sink.snapshot()).delivered }
	var side sync.WaitGroup
	side.Go(func() { meter.run(done) })
	side.Go(func() { out.progress(done, ds, sink, workers) })
	if o.instance == "" && o.crashAt > 0 {
		side.Go(func() {
			var victim *worker
			if waitUntil(ctx, done, func() bool {
				victim = busiest(workers)
				return delivered() >= int64(o.crashAt*float64(ds.records)) && victim != nil
			}) {
				held := victim.held()
				victim.crashNow()
				f.crashed(victim.name, held)
				out.note(fmt.Sprintf("CRASH: %s aborted at %s delivered, holding %d splits (%s); its leases expire within %s",
					victim.name, percent(delivered(), ds.records), len(held), joinIDs(held), leaseDuration))
			}
		})
	}
	if o.outage > 0 {
		side.Go(func() {
			if waitUntil(ctx, done, func() bool { return delivered() >= int64(o.outageAt*float64(ds.records)) }) {
				out.note(fmt.Sprintf("OUTAGE: NATS stopped at %s delivered, for %s", percent(delivered(), ds.records), o.outage))
				if err := st.embedded.outage(ctx, o.outage); err != nil {
					out.note(fmt.Sprintf("restarting the embedded NATS server after the outage: %v", err))
					return
				}
				out.note("OUTAGE over: NATS restarted on the same store")
			}
		})
	}
	side.Wait()
	wg.Wait()
	return errs
}

// busiest returns the running worker reading the most splits, nil if none
// reads any.
func busiest(workers []*worker) *worker {
	var best *worker
	n := 0
	for _, w := range workers {
		if h := len(w.held()); h > n && w.state.Load() == stateRunning && !w.crashed() {
			best, n = w, h
		}
	}
	return best
}

// waitUntil polls cond every 50ms until it holds (true), or done is closed
// or ctx ends first (false).
func waitUntil(ctx context.Context, done <-chan struct{}, cond func() bool) bool {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-done:
			return false
		case <-tick.C:
		}
		if cond() {
			return true
		}
	}
}

// idleMeter measures the report's "tail idle": the lane-seconds this
// process's running workers left idle while records remained, from the
// first delivery on (the start-up is the same with or without runtime
// splits). An idle lane is a slot of -lanes with no read function running.
type idleMeter struct {
	workers []*worker
	lanes   int
	planned int64         // records to deliver in this run
	idle    time.Duration // lane-time; set when run returns
}

// idleTick is how often the meter samples the lanes.
const idleTick = 50 * time.Millisecond

// run samples until done closes.
func (m *idleMeter) run(done <-chan struct{}) {
	t := time.NewTicker(idleTick)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		var delivered int64
		reading, running := 0, 0
		for _, w := range m.workers {
			delivered += w.delivered.Load()
			if w.state.Load() == stateRunning && !w.crashed() {
				running++
				reading += len(w.held())
			}
		}
		switch {
		case delivered >= m.planned:
			return
		case delivered > 0:
			m.idle += time.Duration(max(0, running*m.lanes-reading)) * idleTick
		}
	}
}

// output writes the event log and the progress lines, unless quiet.
type output struct {
	w     io.Writer
	quiet bool
	start time.Time // zero until the workers start

	mu sync.Mutex
}

// note writes one event line, stamped with the time since start.
func (o *output) note(line string) {
	if o.quiet {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.start.IsZero() {
		line = fmt.Sprintf("[%5.1fs] %s", time.Since(o.start).Seconds(), line)
	}
	fmt.Fprintln(o.w, line)
}

// progress writes a progress line every second until done closes, and a
// last one then: the job's records from the ledger, then each worker's
// deliveries and splits (or its state once it stopped).
func (o *output) progress(done <-chan struct{}, ds *dataset, sink *ledger, workers []*worker) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for stop := false; !stop; {
		select {
		case <-done:
			stop = true
		case <-t.C:
		}
		d := tallyOf(ds, sink.snapshot()).delivered
		line := fmt.Sprintf("job %s of %s records (%s)", human(d), human(ds.records), percent(d, ds.records))
		for _, w := range workers {
			now := fmt.Sprintf("%d splits", len(w.held()))
			if s := w.state.Load(); s != stateRunning {
				now = stateNames[s]
			}
			line += fmt.Sprintf(" | %s %s %s", w.name, human(w.delivered.Load()), now)
		}
		o.note(line)
	}
}

// levels are the -log levels but "off".
var levels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// validLevel reports whether s is a -log value.
func validLevel(s string) bool {
	_, ok := levels[s]
	return ok || s == "off"
}

// newLogger returns the library's logger at the -log level, to w.
func newLogger(level string, w io.Writer) *slog.Logger {
	if level == "off" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: levels[level]}))
}

// human renders n compactly: 999, 12.3k, 1.05M.
func human(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	default:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	}
}

// percent renders part of whole as a percentage.
func percent(part, whole int64) string {
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(max(1, whole)))
}

// randomHex returns 2n random lowercase hex characters.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
