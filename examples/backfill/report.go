package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// Outcomes of a run.
const (
	outcomeOK          = iota // the job completed and the ledger shows every record delivered
	outcomeFailed             // loss, a worker failure, or the job did not complete
	outcomeInterrupted        // SIGINT or SIGTERM: stopped cleanly, a rerun resumes
)

// workerShare is one worker's line in the report.
type workerShare struct {
	Name       string
	Deliveries int64  // records it delivered, duplicates included, from the ledger
	State      string // its state (workers of this process), or "other process"
}

// report is the outcome of a run, for the whole job: the record counts come
// from the job's ledger, so they include every process's deliveries.
type report struct {
	Instance   string // "" when this process ran a whole fleet
	Verify     bool   // a -verify run: the ledger only, no workers
	Splits     int
	Planned    int64 // records of the whole job
	Delivered  int64 // records delivered at least once, by any process
	Deliveries int64 // all deliveries, duplicates included
	Local      int64 // deliveries by the workers of this process
	Gaps       string
	Elapsed    time.Duration
	Ideal      time.Duration // the records over all lanes at the pace; 0 unknown
	TailIdle   time.Duration // lane-time this process's lanes idled while records remained
	Residuals  int           // splits cut off at runtime that delivered records, from the ledger
	Crash      string        // crash and recovery summary, "" without a crash
	Takeovers  int           // tenancies resumed from a last commit, replaying what followed it
	Moves      int           // tenancies resumed exactly where the previous one stopped
	Workers    []workerShare
	Errors     []string
	Outcome    int
	Resume     string // how to resume an interrupted run
	Kept       string // how to remove the job and its ledger left on an external store; "" when none is left
}

// newReport builds the report from the ledger's tally and this process's
// workers; interrupted says a signal stopped the run.
func newReport(instance string, ds *dataset, t tally, workers []*worker, f *fleet, elapsed time.Duration, errs []error, interrupted bool) *report {
	r := &report{
		Instance: instance, Splits: len(ds.splits), Planned: t.planned, Delivered: t.delivered,
		Deliveries: t.deliveries, Gaps: formatRanges(t.gaps, 8), Residuals: len(t.residuals),
		Elapsed: elapsed, Resume: "run again to resume",
	}
	if f != nil {
		r.Crash = f.crashSummary()
		r.Takeovers, r.Moves = f.counts()
	}
	local := map[string]bool{}
	complete := true
	for _, w := range workers {
		s := w.state.Load()
		local[w.name] = true
		r.Local += w.delivered.Load()
		r.Workers = append(r.Workers, workerShare{Name: w.name, Deliveries: t.byWorker[w.name], State: stateNames[s]})
		complete = complete && (s == stateCompleted || s == stateCrashed)
	}
	for _, name := range slices.Sorted(maps.Keys(t.byWorker)) {
		if !local[name] {
			r.Workers = append(r.Workers, workerShare{Name: name, Deliveries: t.byWorker[name], State: "other process"})
		}
	}
	for _, err := range errs {
		if err != nil {
			r.Errors = append(r.Errors, strings.ReplaceAll(err.Error(), "\n", "; "))
		}
	}
	switch {
	case len(r.Errors) > 0:
		r.Outcome = outcomeFailed
	case interrupted && t.lost() > 0:
		r.Outcome = outcomeInterrupted
	case complete && t.lost() == 0:
		r.Outcome = outcomeOK
	default:
		r.Outcome = outcomeFailed
	}
	return r
}

// Lost returns the planned records no delivery covers.
func (r *report) Lost() int64 { return r.Planned - r.Delivered }

// Duplicates returns the deliveries beyond each record's first.
func (r *report) Duplicates() int64 { return r.Deliveries - r.Delivered }

// exitStatus is the process's exit status for the report.
func (r *report) exitStatus() int {
	switch r.Outcome {
	case outcomeOK:
		return exitOK
	case outcomeInterrupted:
		return exitInterrupted
	default:
		return exitFailed
	}
}

// write prints the report, one "key: value" line per fact, so a script can
// grep it (for example for "lost: 0").
func (r *report) write(w io.Writer) {
	title := "backfill report"
	switch {
	case r.Verify:
		title += " (-verify: the job's ledger)"
	case r.Instance != "":
		title += " (instance " + r.Instance + ")"
	}
	fmt.Fprintf(w, "\n== %s ==\n", title)
	line := func(key, format string, a ...any) { fmt.Fprintf(w, "%-16s %s\n", key+":", fmt.Sprintf(format, a...)) }
	line("planned", "%d records in %d splits", r.Planned, r.Splits)
	line("delivered", "%d records at least once, fleet-wide (%d deliveries in all)", r.Delivered, r.Deliveries)
	if !r.Verify {
		line("this process", "%d deliveries", r.Local)
	}
	if r.Duplicates() > 0 {
		line("duplicates", "%d (replayed after a crash or a forced move: at most one commit interval, %s, of reading per split)", r.Duplicates(), commitEvery)
	} else {
		line("duplicates", "0")
	}
	if r.Outcome == outcomeInterrupted {
		line("remaining", "%d records not delivered yet", r.Lost())
	} else {
		line("lost", "%d", r.Lost())
		if r.Gaps != "" {
			line("missing", "%s", r.Gaps)
		}
	}
	if !r.Verify {
		line("elapsed", "%.1fs", r.Elapsed.Seconds())
		if r.Ideal > 0 && r.Instance == "" {
			line("ideal", "%.1fs (every lane busy at -pace until the end: elapsed is %.2fx it)", r.Ideal.Seconds(), r.Elapsed.Seconds()/r.Ideal.Seconds())
		}
		line("tail idle", "%.1f lane-seconds (lanes idle while records remained)", r.TailIdle.Seconds())
	}
	line("runtime splits", "%d", r.Residuals)
	if r.Crash != "" {
		line("crash", "%s", r.Crash)
	}
	if r.Takeovers > 0 {
		line("takeovers", "%d splits resumed from the last commit after a crash or a forced move", r.Takeovers)
	}
	if r.Moves > 0 {
		line("moves", "%d splits resumed exactly where their previous tenancy stopped (a drain or a clean stop), with no replay", r.Moves)
	}
	for _, s := range r.Workers {
		line("worker", "%-6s %5.1f%%  %8d records  %s", s.Name, 100*float64(s.Deliveries)/float64(max(1, r.Deliveries)), s.Deliveries, s.State)
	}
	for _, e := range r.Errors {
		line("error", "%s", e)
	}
	if r.Kept != "" {
		line("kept", "%s", r.Kept)
	}
	line("result", "%s", r.result())
}

// result is the verdict line.
func (r *report) result() string {
	switch {
	case r.Outcome == outcomeOK:
		return "OK, every planned record was delivered at least once (per the job's ledger in its store)"
	case r.Outcome == outcomeInterrupted:
		return "interrupted; " + r.Resume
	case r.Verify:
		return fmt.Sprintf("FAILED, %d records in no delivery of the ledger (is the job still running?)", r.Lost())
	default:
		return "FAILED, the job did not complete"
	}
}

// verify reads the job's ledger on -nats or -postgres and reports on it
// alone. It creates nothing: a job with no ledger there is an error naming
// the job it looked for.
func verify(ctx context.Context, o *options) (*report, error) {
	ds := datasetOf(o)
	job := o.job
	if job == "" {
		job = jobName(ds.planner())
	}
	st, err := openStores(o)
	if err != nil {
		return nil, err
	}
	lst, err := st.open(ledgerJob(job), true)
	if err == nil {
		var sink *ledger
		if sink, err = openLedger(ctx, lst); err == nil {
			defer sink.close()
			rep := newReport("", ds, tallyOf(ds, sink.snapshot()), nil, nil, 0, nil, false)
			rep.Verify = true
			rep.Kept = st.kept(job)
			return rep, nil
		}
	}
	how := "the -job given"
	if o.job == "" {
		how = fmt.Sprintf("the job of -splits %d -records %d; pass the -job, or the -splits and -records, of the run to verify", o.splits, o.records)
	}
	return nil, fmt.Errorf("-verify: no ledger of job %q on %s (%v); looked for %s", job, st.where, err, how)
}
