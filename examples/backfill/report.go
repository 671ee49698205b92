package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spate-go/coordination/internal/tty"
)

// Outcomes of a run, each with its own exit status.
const (
	outcomeOK          = iota // the job completed and the ledger shows every record delivered
	outcomeFailed             // loss, a worker failure, or the job did not complete
	outcomeInterrupted        // SIGINT or SIGTERM: stopped cleanly, a rerun resumes
)

// exitStatus maps an outcome to the process's exit status.
func exitStatus(outcome int) int {
	switch outcome {
	case outcomeOK:
		return 0
	case outcomeInterrupted:
		return 3
	default:
		return 1
	}
}

// workerShare is one worker's line in the report.
type workerShare struct {
	Name       string
	Deliveries int64  // records it delivered, duplicates included, from the ledger
	Completed  int64  // splits it read to their end (workers of this process only)
	State      string // its state (workers of this process), or "other process"
}

// report is the outcome of a run, for the whole job: the record counts come
// from the job's ledger in its store, so they include every process's deliveries.
type report struct {
	Instance   string // "" when this process ran a whole fleet
	Verify     bool   // a -verify run: the ledger only, no workers
	Splits     int
	Planned    int64 // records of the whole job
	Delivered  int64 // records delivered at least once, by any process
	Deliveries int64 // all deliveries, duplicates included
	Duplicates int64 // deliveries beyond each record's first
	Local      int64 // deliveries by the workers of this process
	Gaps       []recordRange
	Elapsed    time.Duration
	Crash      string        // crash and recovery summary, "" without a crash
	Residuals  int           // splits cut off at runtime that delivered records, from the ledger
	TailIdle   time.Duration // lane-time this process's lanes idled while records remained
	Ideal      time.Duration // this run's records over all its lanes at the pace; 0 unknown
	Takeovers  int           // splits this process resumed after another tenancy
	Moves      int           // cooperative moves (drained hand-backs) in this process
	Workers    []workerShare
	Errors     []string // worker failures
	Audit      []string // the lines of the final audit (coordctl audit), nil without one
	Outcome    int
	Resume     string // how to resume an interrupted run ("run again to resume")
	Color      bool   // colour the result line
}

// newReport builds the report from the ledger's tally and this process's
// workers; interrupted says the run was stopped by a signal.
func newReport(instance string, ds *dataset, t tally, workers []*worker, f *fleet, elapsed time.Duration, errs []error, interrupted bool) *report {
	r := &report{
		Instance:   instance,
		Splits:     len(ds.splits),
		Planned:    t.planned,
		Delivered:  t.delivered,
		Deliveries: t.deliveries,
		Duplicates: t.duplicates(),
		Gaps:       t.gaps,
		Residuals:  t.residuals,
		Elapsed:    elapsed,
		Resume:     "run again to resume",
	}
	if f != nil {
		r.Crash = f.crashSummary()
		r.Takeovers, r.Moves, _ = f.counts()
	}
	local := map[string]bool{}
	complete := true
	for _, w := range workers {
		s := w.state.Load()
		local[w.name] = true
		r.Local += w.src.delivered.Load()
		r.Workers = append(r.Workers, workerShare{
			Name:       w.name,
			Deliveries: t.byWorker[w.name],
			Completed:  w.src.completed.Load(),
			State:      stateName(s),
		})
		complete = complete && (s == stateCompleted || s == stateCrashed)
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range t.byWorker {
			if !yield(n) {
				return
			}
		}
	}) {
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
	case (complete || len(workers) == 0) && t.lost() == 0:
		r.Outcome = outcomeOK
	default:
		r.Outcome = outcomeFailed
	}
	return r
}

// Lost returns the planned records no delivery covers.
func (r *report) Lost() int64 { return r.Planned - r.Delivered }

// write prints the report, one "key: value" line per fact, so a script can
// grep it (for example for "lost: 0"); a long value wraps onto indented
// lines, so no line passes lineWidth.
func (r *report) write(w io.Writer) {
	title := "backfill report"
	switch {
	case r.Verify:
		title += " (-verify: the job's ledger)"
	case r.Instance != "":
		title += " (instance " + r.Instance + ")"
	}
	fmt.Fprintf(w, "\n== %s ==\n", title)
	line := func(key, format string, a ...any) {
		head := fmt.Sprintf("%-12s ", key+":")
		for _, l := range wrap(head, fmt.Sprintf(format, a...), len(head)) {
			fmt.Fprintln(w, l)
		}
	}
	line("planned", "%s in %s", count(r.Planned, "record"), count(r.Splits, "split"))
	line("delivered", "%s at least once, fleet-wide (%s in all)", count(r.Delivered, "record"), count(r.Deliveries, "delivery"))
	if !r.Verify {
		line("this process", "%s", count(r.Local, "delivery"))
	}
	if r.Duplicates > 0 {
		line("duplicates", "%d (replayed after a crash or a forced move: at most one commit interval, %s, of reading per split; a NATS outage adds at most -pause-after and one OpTimeout, %s, as lanes pause while commits do not land)", r.Duplicates, commitEvery, opTimeout)
	} else {
		line("duplicates", "0")
	}
	switch r.Outcome {
	case outcomeInterrupted:
		line("remaining", "%s not delivered yet", count(r.Lost(), "record"))
	default:
		line("lost", "%d", r.Lost())
		if len(r.Gaps) > 0 {
			line("missing", "%s", formatRanges(r.Gaps, 8))
		}
	}
	if !r.Verify {
		line("elapsed", "%.1fs", r.Elapsed.Seconds())
		if r.Ideal > 0 && r.Instance == "" {
			line("ideal", "%.1fs (every lane busy at -pace until the end: elapsed is %.2fx it)", r.Ideal.Seconds(), r.Elapsed.Seconds()/r.Ideal.Seconds())
		}
	}
	line("runtime splits", "%d", r.Residuals)
	if !r.Verify {
		line("tail idle", "%.1f lane-seconds (lanes idle while records remained)", r.TailIdle.Seconds())
	}
	if r.Crash != "" {
		line("crash", "%s", r.Crash)
	}
	if r.Takeovers > 0 {
		line("takeovers", "%s resumed from the last commit after a crash or a forced move", count(r.Takeovers, "split"))
	}
	if r.Moves > 0 {
		line("moves", "%s drained and handed back, resumed by the next owner with no replay", count(r.Moves, "split"))
	}
	for _, s := range r.Workers {
		share := fmt.Sprintf("%-6s %5.1f%%  %8d records", s.Name, 100*float64(s.Deliveries)/float64(max(1, r.Deliveries)), s.Deliveries)
		if s.State != "other process" {
			share += fmt.Sprintf("  %s completed", padLeft(count(s.Completed, "split"), 10))
		}
		fmt.Fprintf(w, "%-12s %s  %s\n", "worker:", share, s.State)
	}
	for _, a := range r.Audit {
		line("audit", "%s", a)
	}
	for _, e := range r.Errors {
		line("error", "%s", e)
	}
	line("result", "%s", r.result())
}

// result is the verdict line.
func (r *report) result() string {
	switch {
	case r.Outcome == outcomeOK:
		return tty.Paint(r.Color, green, "OK") + ", every planned record was delivered at least once (per the job's ledger in its store)"
	case r.Outcome == outcomeInterrupted:
		return tty.Paint(r.Color, yellow, "interrupted") + "; " + r.Resume
	case r.Verify:
		return tty.Paint(r.Color, red, "FAILED") + fmt.Sprintf(", %s in no delivery of the ledger (is the job still running?)", count(r.Lost(), "record"))
	case len(r.Errors) == 0 && r.Lost() > 0:
		return tty.Paint(r.Color, red, "FAILED") + fmt.Sprintf(", the job did not complete: %s not delivered", count(r.Lost(), "record"))
	default:
		return tty.Paint(r.Color, red, "FAILED") + ", the job did not complete"
	}
}

// padLeft right-aligns s in width columns.
func padLeft(s string, width int) string {
	return strings.Repeat(" ", max(0, width-len(s))) + s
}

// formatRanges renders at most limit ranges as "start-end" (end exclusive),
// space separated, and how many more there are.
func formatRanges(rs []recordRange, limit int) string {
	parts := make([]string, 0, min(len(rs), limit))
	for _, r := range rs[:min(len(rs), limit)] {
		parts = append(parts, r.String())
	}
	s := strings.Join(parts, " ")
	if len(rs) > limit {
		s += fmt.Sprintf(" and %d more", len(rs)-limit)
	}
	return s
}
