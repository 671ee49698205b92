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

	"github.com/spate-go/coordination/internal/tty"
)

var watchCommand = command{
	name:  "watch",
	about: "Shows the job's status refreshed live until interrupted: totals, a progress bar of the\ncompleted weight, the live workers and the recent moves of splits. On a terminal each\nrefresh redraws the screen (coloured unless NO_COLOR is set); otherwise (a pipe, a file)\nit writes one plain line per refresh and one per move, with no escape sequences.",
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
			st, err := e.conn.open(ctx)
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
			watchLoop(ctx, read, tick.C, time.Now, e.stdout, styleOf(e.stdout))
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

// watchStyle is how watch writes its refreshes to one output.
type watchStyle struct {
	redraw bool // a terminal: clear the screen and draw each refresh in place
	color  bool // colour the bar and the alerts (a terminal, NO_COLOR unset)
}

// styleOf returns the style of output to out: frames redrawn in place on a
// terminal, plain lines otherwise.
func styleOf(out io.Writer) watchStyle {
	return watchStyle{redraw: tty.Terminal(out), color: tty.Color(out)}
}

// watchLoop renders a refresh at once and at every tick until ctx ends:
// with style.redraw a frame that clears the screen, else one line per
// refresh after a line per new move. A failed refresh shows the error
// (under the last good frame when redrawing); a refresh cut short by the
// end of ctx is not shown.
func watchLoop(ctx context.Context, read func() (status, error), tick <-chan time.Time, now func() time.Time, out io.Writer, style watchStyle) {
	var last *status
	var moves []move
	for {
		s, err := read()
		if ctx.Err() != nil {
			return // interrupted: a refresh cut short is no failure to show
		}
		at := now()
		var fresh []move
		if err == nil {
			if last != nil {
				fresh = movesBetween(*last, s, at)
				moves = append(moves, fresh...)
				moves = moves[max(0, len(moves)-maxMoves):]
			}
			last = &s
		}
		var b strings.Builder
		if style.redraw {
			b.WriteString("\x1b[H\x1b[2J")
			renderFrame(&b, last, moves, at, err, style.color)
		} else {
			renderLines(&b, s, fresh, at, err)
		}
		_, _ = io.WriteString(out, b.String())
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

// renderFrame writes one redrawn frame: the last good status, if any, and
// the refresh error, if any.
func renderFrame(b *strings.Builder, last *status, moves []move, at time.Time, err error, color bool) {
	if last != nil {
		renderWatch(b, *last, moves, at, color)
	}
	if err != nil {
		if last != nil {
			b.WriteString("\n")
		}
		b.WriteString(tty.Paint(color, sgrRed, "refresh failed: "+err.Error()) + "\n")
	}
}

// renderLines writes one plain refresh: a line per new move, then the
// status line (or the refresh error).
func renderLines(b *strings.Builder, s status, fresh []move, at time.Time, err error) {
	clock := at.Format("15:04:05")
	if err != nil {
		fmt.Fprintf(b, "%s refresh failed: %v\n", clock, err)
		return
	}
	for _, m := range fresh {
		fmt.Fprintf(b, "%s   %s %s\n", clock, m.split, m.what)
	}
	t := s.Splits
	fmt.Fprintf(b, "%s %s, leader %s, %s: %s of the weight completed (%d of %d splits), %d held, %d quarantined\n",
		clock, s.State, leaderOf(s), counted(len(s.Workers), "worker"), percent(t.CompletedWeight, t.TotalWeight), t.Completed, t.Total, t.Held, t.Quarantined)
}

// counted writes n and the noun, plural unless n is 1 ("1 worker", "0
// workers").
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// leaderOf names the job's leader, "none" without one.
func leaderOf(s status) string {
	if s.Leader == nil {
		return "none"
	}
	return s.Leader.Instance
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

// SGR colours of watch's frames on a terminal.
const (
	sgrGreen = "32"
	sgrRed   = "31"
)

// renderWatch writes one frame of watch: the totals, a bar of the
// completed weight, the workers and the recent moves. color paints the
// bar's completed part and a non-zero quarantined count.
func renderWatch(w io.Writer, s status, moves []move, now time.Time, color bool) {
	t := s.Splits
	quarantined := fmt.Sprintf("quarantined %d", t.Quarantined)
	if t.Quarantined > 0 {
		quarantined = tty.Paint(color, sgrRed, quarantined)
	}
	fmt.Fprintf(w, "job %q  %s  (Ctrl-C to stop)\n", s.Job, now.Format("15:04:05"))
	fmt.Fprintf(w, "state %s, plan %s generation %d, leader %s, %s\n", s.State, s.Finality, s.Generation, leaderOf(s), counted(len(s.Workers), "live worker"))
	fmt.Fprintf(w, "%s %s of the weight completed (%d of %d splits)\n", bar(t.CompletedWeight, t.TotalWeight, color), percent(t.CompletedWeight, t.TotalWeight), t.Completed, t.Total)
	fmt.Fprintf(w, "runnable %d, held %d, completed %d, %s; remaining %d splits, weight %d\n", t.Runnable, t.Held, t.Completed, quarantined, t.Remaining, t.RemainingWeight)
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

// bar renders part/whole as a bar of barWidth characters, its filled part
// green when color is on.
func bar(part, whole uint64, color bool) string {
	n := 0
	if whole > 0 {
		n = int(min(part, whole) * barWidth / whole)
	}
	return "[" + tty.Paint(color, sgrGreen, strings.Repeat("#", n)) + strings.Repeat(".", barWidth-n) + "]"
}
