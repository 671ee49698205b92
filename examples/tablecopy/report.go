package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// report is what a run found: the job, how it went, and the SQL verdict.
type report struct {
	table, sink          string
	keys                 keyRange
	rows                 int64 // in the source at planning
	splits               int
	minWeight, maxWeight int64  // rows per split
	instance             string // -instance, "" for a whole fleet

	states         []workerState
	joined, killed string // the late worker and the killed one, "" if none
	elapsed        time.Duration
	skipped        int64 // rows not replayed thanks to the sink's watermark (this process)
	cuts           int64 // runtime splits this process's lanes cut off (this process)

	verdict verdict

	plainRows    int64 // the baseline, 0 when not run
	plainElapsed time.Duration
}

// workerState is how one worker of this process ended.
type workerState struct{ name, state string }

// ok reports whether the sink equals the source.
func (r *report) ok() bool { return r.verdict.equal() }

// write renders the report.
func (r *report) write(w io.Writer) {
	v := r.verdict
	fmt.Fprintf(w, "\nverification (SQL on both tables):\n")
	fmt.Fprintf(w, "  source %-18s %s\n", r.table+":", v.Source)
	fmt.Fprintf(w, "  sink   %-18s %s\n", r.sink+":", v.Sink)
	if !v.equal() {
		fmt.Fprintf(w, "  differences:              %d missing, %d extra, %d with other values\n", v.Missing, v.Extra, v.Differing)
	}
	fmt.Fprintf(w, "  page transactions:        %d (rows, watermark and counts in each)\n", v.Pages)
	fmt.Fprintf(w, "  duplicates absorbed:      %d rows (ON CONFLICT DO NOTHING)\n", v.Absorbed)
	fmt.Fprintf(w, "  replay avoided:           %d rows (resumed at the sink's watermark, ahead of the coordinator's)\n", r.skipped)
	fmt.Fprintf(w, "  runtime splits:           %d (key ranges cut off running splits for idle lanes, this process)\n", r.cuts)
	// Every worker that wrote, from the sink's counts (so peers in other
	// processes too), and this process's workers that did not.
	state := make(map[string]string)
	for _, s := range r.states {
		state[s.name] = s.state
	}
	names := slices.Sorted(maps.Keys(v.Written))
	for _, s := range r.states {
		if _, ok := v.Written[s.name]; !ok {
			names = append(names, s.name)
		}
	}
	var ws []string
	for _, n := range names {
		st, ok := state[n]
		if !ok {
			st = "in another process"
		}
		ws = append(ws, fmt.Sprintf("%s %s (%d rows)", n, st, v.Written[n]))
	}
	fmt.Fprintf(w, "  workers:                  %s\n", strings.Join(ws, ", "))
	fmt.Fprintf(w, "throughput:\n")
	how := fmt.Sprintf("%d workers", len(r.states))
	if r.instance != "" {
		how = "this process and its peers"
	}
	if r.killed != "" {
		how += ", one killed (its splits wait for its leases to expire)"
	}
	fmt.Fprintf(w, "  coordinated copy:         %s (%s)\n", rate(r.rows, r.elapsed), how)
	if r.plainRows > 0 {
		fmt.Fprintf(w, "  plain copy:               %s (one goroutine, same pages, no coordinator, no watermark)\n", rate(r.plainRows, r.plainElapsed))
	}
	if v.equal() {
		fmt.Fprintf(w, "result: OK, the sink equals the source\n")
	} else {
		fmt.Fprintf(w, "result: FAILED, the sink differs from the source\n")
	}
}

// rate renders rows copied in d.
func rate(rows int64, d time.Duration) string {
	return fmt.Sprintf("%d rows in %.1fs = %.0f rows/s", rows, d.Seconds(), float64(rows)/max(d.Seconds(), 1e-9))
}
