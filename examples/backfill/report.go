package main

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"
)

// ledger is the sink every worker delivers to: one delivery counter per
// record, shared by all the workers of this process. It is how the program
// proves the library's at-least-once guarantee: a record never delivered is
// lost, every delivery beyond a record's first is a duplicate (a replay after
// a crash). Safe for concurrent use; it holds no lock.
type ledger struct {
	counts     []atomic.Uint32 // deliveries per record number
	unique     atomic.Int64    // records delivered at least once
	deliveries atomic.Int64    // all deliveries
	perWorker  []atomic.Int64  // deliveries per worker index
}

// newLedger returns an empty ledger for records numbered 0..records-1 and
// workers indexed 0..workers-1.
func newLedger(records int64, workers int) *ledger {
	return &ledger{
		counts:    make([]atomic.Uint32, records),
		perWorker: make([]atomic.Int64, workers),
	}
}

// deliver records that worker delivered the records of r to the sink.
func (l *ledger) deliver(worker int, r recordRange) {
	var first int64
	for i := r.Start; i < r.End; i++ {
		if l.counts[i].Add(1) == 1 {
			first++
		}
	}
	l.unique.Add(first)
	l.deliveries.Add(r.Len())
	l.perWorker[worker].Add(r.Len())
}

// planned returns the number of records the ledger covers.
func (l *ledger) planned() int64 { return int64(len(l.counts)) }

// delivered returns the records delivered at least once.
func (l *ledger) delivered() int64 { return l.unique.Load() }

// total returns every delivery, duplicates included.
func (l *ledger) total() int64 { return l.deliveries.Load() }

// byWorker returns the deliveries of one worker, duplicates included.
func (l *ledger) byWorker(worker int) int64 { return l.perWorker[worker].Load() }

// lost returns the planned records never delivered.
func (l *ledger) lost() int64 { return l.planned() - l.delivered() }

// duplicates returns the deliveries beyond each record's first.
func (l *ledger) duplicates() int64 { return l.total() - l.delivered() }

// ranges returns the delivered records as sorted, maximal half-open ranges.
func (l *ledger) ranges() []recordRange {
	var out []recordRange
	open := false
	for i := range l.counts {
		in := l.counts[i].Load() > 0
		switch {
		case in && !open:
			out = append(out, recordRange{Start: int64(i), End: int64(i)})
			open = true
		case !in && open:
			out[len(out)-1].End = int64(i)
			open = false
		}
	}
	if open {
		out[len(out)-1].End = int64(len(l.counts))
	}
	return out
}

// workerShare is one worker's line in the report.
type workerShare struct {
	Name       string
	Deliveries int64 // records delivered, duplicates included
	Completed  int64 // splits this worker committed complete
	State      string
}

// report is the outcome of a run.
type report struct {
	Instance   string // "" when this process ran the whole fleet
	Splits     int
	Planned    int64 // records of the whole job
	Delivered  int64 // records this process delivered at least once
	Deliveries int64 // all deliveries of this process, duplicates included
	Duplicates int64 // deliveries beyond each record's first
	Lost       int64 // planned records never delivered (fleet mode only)
	Elapsed    time.Duration
	Crash      string // crash and recovery summary, "" without a crash
	Moves      int    // cooperative moves (drained hand-backs)
	Workers    []workerShare
	Ranges     []recordRange // the records this process delivered (instance mode)
	Errors     []string      // worker failures
	Complete   bool          // every worker of this process saw the job complete (or crashed on purpose)
}

// ok reports whether the run succeeded: in fleet mode nothing was lost and
// no worker failed; in instance mode the job completed and the worker did not
// fail.
func (r *report) ok() bool {
	if len(r.Errors) > 0 || !r.Complete {
		return false
	}
	return r.Instance != "" || r.Lost == 0
}

// newReport builds the report from the ledger and the workers.
func newReport(instance string, ds *dataset, sink *ledger, workers []*worker, f *fleet, elapsed time.Duration, errs []error) *report {
	r := &report{
		Instance:   instance,
		Splits:     len(ds.splits),
		Planned:    sink.planned(),
		Delivered:  sink.delivered(),
		Deliveries: sink.total(),
		Duplicates: sink.duplicates(),
		Lost:       sink.lost(),
		Elapsed:    elapsed,
		Crash:      f.crashSummary(),
		Complete:   true,
	}
	f.mu.Lock()
	r.Moves = f.moves
	f.mu.Unlock()
	for _, w := range workers {
		s := w.state.Load()
		r.Workers = append(r.Workers, workerShare{
			Name:       w.name,
			Deliveries: sink.byWorker(w.index),
			Completed:  w.completed.Load(),
			State:      stateName(s),
		})
		if s != stateCompleted && s != stateCrashed {
			r.Complete = false
		}
	}
	for _, err := range errs {
		if err != nil {
			r.Errors = append(r.Errors, strings.ReplaceAll(err.Error(), "\n", "; "))
		}
	}
	if instance != "" {
		r.Ranges = sink.ranges()
	}
	return r
}

// write prints the report, one "key: value" line per fact, so a script can
// grep it (for example for "lost: 0").
func (r *report) write(w io.Writer) {
	title := "backfill report"
	if r.Instance != "" {
		title += " (instance " + r.Instance + ")"
	}
	fmt.Fprintf(w, "\n== %s ==\n", title)
	fmt.Fprintf(w, "planned:     %d records in %d splits\n", r.Planned, r.Splits)
	if r.Instance == "" {
		fmt.Fprintf(w, "delivered:   %d records (%d deliveries by %d workers)\n", r.Delivered, r.Deliveries, len(r.Workers))
	} else {
		fmt.Fprintf(w, "delivered:   %d records by this process (%d deliveries)\n", r.Delivered, r.Deliveries)
	}
	if r.Duplicates > 0 {
		fmt.Fprintf(w, "duplicates:  %d (replayed after a crash or forced move: about one commit interval, %s, of reading per split)\n", r.Duplicates, commitEvery)
	} else {
		fmt.Fprintf(w, "duplicates:  0\n")
	}
	if r.Instance == "" {
		fmt.Fprintf(w, "lost:        %d\n", r.Lost)
	} else {
		fmt.Fprintf(w, "lost:        n/a (each process sees only its own deliveries; union the ranges)\n")
		fmt.Fprintf(w, "ranges:      %s\n", formatRanges(r.Ranges))
		if r.Delivered == 0 {
			fmt.Fprintf(w, "note:        this process delivered nothing: the job was already complete on this server,\n")
			fmt.Fprintf(w, "             or the other processes held every split (-job NAME starts a fresh job)\n")
		}
	}
	fmt.Fprintf(w, "elapsed:     %.1fs\n", r.Elapsed.Seconds())
	if r.Crash != "" {
		fmt.Fprintf(w, "crash:       %s\n", r.Crash)
	}
	if r.Moves > 0 {
		fmt.Fprintf(w, "moves:       %d splits drained and handed off without replay\n", r.Moves)
	}
	var total int64
	for _, s := range r.Workers {
		total += s.Deliveries
	}
	for _, s := range r.Workers {
		fmt.Fprintf(w, "worker:      %-6s %5.1f%%  %8d records  %3d splits completed  %s\n",
			s.Name, 100*float64(s.Deliveries)/float64(max(1, total)), s.Deliveries, s.Completed, s.State)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "error:       %s\n", e)
	}
	switch {
	case r.ok() && r.Instance == "":
		fmt.Fprintf(w, "result:      OK, every planned record was delivered at least once\n")
	case r.ok():
		fmt.Fprintf(w, "result:      OK, the job completed (AllComplete)\n")
	case r.Instance == "" && r.Lost > 0:
		fmt.Fprintf(w, "result:      FAILED, %d records lost\n", r.Lost)
	default:
		fmt.Fprintf(w, "result:      FAILED, the job did not complete\n")
	}
}

// formatRanges renders ranges as "start-end" (end exclusive), space separated.
func formatRanges(rs []recordRange) string {
	if len(rs) == 0 {
		return "none"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.String()
	}
	return strings.Join(parts, " ")
}

// parseRanges reads back what formatRanges wrote.
func parseRanges(s string) ([]recordRange, error) {
	if s == "none" {
		return nil, nil
	}
	var out []recordRange
	for f := range strings.FieldsSeq(s) {
		var r recordRange
		if _, err := fmt.Sscanf(f, "%d-%d", &r.Start, &r.End); err != nil {
			return nil, fmt.Errorf("range %q: %w", f, err)
		}
		out = append(out, r)
	}
	return out, nil
}
