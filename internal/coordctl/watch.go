package coordctl

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

var watchCommand = command{
	name:  "watch",
	about: "Shows the job's status refreshed live until interrupted: totals, a progress bar of the\ncompleted weight, the live workers and the recent moves of splits.",
	flags: func(fs *flag.FlagSet) func(context.Context, *env) int {
		interval := fs.Duration("interval", time.Second, "refresh interval")
		return func(ctx context.Context, e *env) int {
			if len(e.args) > 0 {
				return e.failf("watch takes no arguments, got %q", e.args[0])
			}
			if *interval <= 0 {
				fmt.Fprintf(e.stderr, "coordctl watch: -interval must be positive, got %s\n", *interval)
				return ExitUsage
			}
			st, err := e.conn.open()
			if err != nil {
				return e.failf("%v", err)
			}
			defer st.Close()
			read := func() (status, error) {
				rctx, cancel := context.WithTimeout(ctx, e.conn.timeout)
				defer cancel()
				j, err := readJob(rctx, st, false)
				if err != nil {
					return status{}, err
				}
				return statusOf(e.conn.job, j, false), nil
			}
			tick := time.NewTicker(*interval)
			defer tick.Stop()
			watchLoop(ctx, read, tick.C, time.Now, e.stdout, true)
			return ExitOK
		}
	},
}

// maxMoves is how many recent moves watch shows.
const maxMoves = 10

// move is one change of a split's placement between two refreshes.
type move struct {
	at    time.Time
	split string
	what  string
}

// watchLoop renders a frame at once and at every tick until ctx ends.
// clear prefixes each frame with the terminal's clear-screen sequence. A
// failed refresh shows the error under the last good frame.
func watchLoop(ctx context.Context, read func() (status, error), tick <-chan time.Time, now func() time.Time, out io.Writer, clear bool) {
	var last *status
	var moves []move
	for {
		s, err := read()
		var b strings.Builder
		if clear {
			b.WriteString("\x1b[H\x1b[2J")
		}
		switch {
		case err == nil:
			if last != nil {
				moves = append(moves, movesBetween(*last, s, now())...)
				moves = moves[max(0, len(moves)-maxMoves):]
			}
			last = &s
			renderWatch(&b, s, moves, now())
		case last != nil:
			renderWatch(&b, *last, moves, now())
			fmt.Fprintf(&b, "\nrefresh failed: %v\n", err)
		default:
			fmt.Fprintf(&b, "refresh failed: %v\n", err)
		}
		_, _ = io.WriteString(out, b.String())
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

// movesBetween lists the placement changes from a to b, by split id.
func movesBetween(a, b status, at time.Time) []move {
	var out []move
	for _, id := range slices.Sorted(maps.Keys(b.owners)) {
		was, had := a.owners[id]
		is := b.owners[id]
		if had && was == is {
			continue
		}
		var what string
		switch {
		case !had:
			what = "planned"
		case is.status == splitCompleted:
			what = "completed by " + orNone(is.instance)
		case is.status == splitQuarantined:
			what = "quarantined"
		case was.status == splitQuarantined:
			what = "requeued"
		case is.status == splitHeld && was.status == splitHeld:
			what = was.instance + " -> " + is.instance
		case is.status == splitHeld:
			what = "claimed by " + is.instance
		case was.status == splitHeld && is.instance == "":
			what = "handed back by " + was.instance
		case was.status == splitHeld:
			what = "session of " + was.instance + " ended"
		default:
			continue
		}
		out = append(out, move{at: at, split: id, what: what})
	}
	return out
}

// barWidth is the progress bar's width in characters.
const barWidth = 40

// renderWatch writes one frame of watch: the totals, a bar of the
// completed weight, the workers and the recent moves.
func renderWatch(w io.Writer, s status, moves []move, now time.Time) {
	t := s.Splits
	leader := "none"
	if s.Leader != nil {
		leader = s.Leader.Instance
	}
	fmt.Fprintf(w, "job %q  %s  (Ctrl-C to stop)\n", s.Job, now.Format("15:04:05"))
	fmt.Fprintf(w, "state %s, plan %s generation %d, leader %s, %d live workers\n", s.State, s.Finality, s.Generation, leader, len(s.Workers))
	fmt.Fprintf(w, "%s %s of the weight completed (%d of %d splits)\n", bar(t.CompletedWeight, t.TotalWeight), percent(t.CompletedWeight, t.TotalWeight), t.Completed, t.Total)
	fmt.Fprintf(w, "runnable %d, held %d, completed %d, quarantined %d; remaining %d splits, weight %d\n", t.Runnable, t.Held, t.Completed, t.Quarantined, t.Remaining, t.RemainingWeight)
	if len(s.Workers) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "\nWORKER\tHELD\tWEIGHT\n")
		for _, wk := range s.Workers {
			fmt.Fprintf(tw, "%s\t%d\t%d\n", wk.Instance, wk.Held, wk.HeldWeight)
		}
		_ = tw.Flush()
	}
	if len(moves) > 0 {
		fmt.Fprintf(w, "\nrecent moves:\n")
		for _, m := range slices.Backward(moves) {
			fmt.Fprintf(w, "  %s  %s  %s\n", m.at.Format("15:04:05"), m.split, m.what)
		}
	}
}

// bar renders part/whole as a bar of barWidth characters.
func bar(part, whole uint64) string {
	n := 0
	if whole > 0 {
		n = int(min(part, whole) * barWidth / whole)
	}
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", barWidth-n) + "]"
}
