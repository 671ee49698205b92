package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/spate-go/coordination/internal/examplekit"
	"github.com/spate-go/coordination/internal/tty"
)

// Display modes.
const (
	modeBars  = iota // live progress bars (stdout is a terminal)
	modePlain        // a plain status line every plainEvery (stdout is a pipe or file)
	modeQuiet        // nothing but the final report
)

const (
	sampleEvery = 200 * time.Millisecond // bar refresh
	plainEvery  = time.Second            // status line cadence in plain mode
)

// ANSI colours of the display and the report.
const (
	red    = "31"
	green  = "32"
	yellow = "33"
)

// display shows the run's progress: with mpb on a terminal, a bar per worker
// of this process scaled to that worker's own share (the records of the
// splits it was given, from where it resumed them) and one for the whole
// job, filled from the ledger; plain periodic lines otherwise; and the event
// log (crash, takeovers, moves) above them. Library logs never go through
// it: see libraryLogger.
type display struct {
	mode    int
	color   bool
	out     io.Writer
	sink    *ledger
	ds      *dataset
	workers []*worker
	start   time.Time

	mu sync.Mutex // serialises plain-mode writes

	p       *mpb.Progress
	bars    []*mpb.Bar
	overall *mpb.Bar

	quit chan struct{} // closed by finish
	done chan struct{} // closed when the sampler has exited
}

// displayMode is the display the flags and the output ask for: nothing
// but the report with -quiet, bars on a terminal unless -plain, plain lines
// otherwise.
func displayMode(o *options, terminal bool) int {
	switch {
	case o.quiet:
		return modeQuiet
	case !o.plain && terminal:
		return modeBars
	}
	return modePlain
}

// newDisplay prepares a display of mode on out for the job of ds; bars are
// coloured when standard output may be.
func newDisplay(mode int, out io.Writer, sink *ledger, ds *dataset) *display {
	d := &display{mode: mode, color: mode == modeBars && tty.Color(os.Stdout), out: out, sink: sink, ds: ds, quit: make(chan struct{}), done: make(chan struct{})}
	if mode == modeBars {
		d.p = mpb.New(mpb.WithOutput(out), mpb.WithWidth(32), mpb.WithRefreshRate(sampleEvery), mpb.WithAutoRefresh())
	}
	return d
}

// note writes one event line, stamped with the time since start and
// wrapped to lineWidth.
func (d *display) note(line string) {
	stamp := ""
	if !d.start.IsZero() {
		stamp = fmt.Sprintf("[%5.1fs] ", time.Since(d.start).Seconds())
	}
	text := strings.Join(wrap(stamp, line, len(stamp)), "\n")
	switch d.mode {
	case modeBars:
		fmt.Fprintln(d.p, text)
	case modePlain:
		d.mu.Lock()
		fmt.Fprintln(d.out, text)
		d.mu.Unlock()
	}
}

// run attaches the workers, adds their bars and starts sampling.
func (d *display) run(workers []*worker) {
	d.workers = workers
	d.start = time.Now()
	if d.mode == modeBars {
		for _, w := range workers {
			d.bars = append(d.bars, d.p.AddBar(0,
				mpb.PrependDecorators(
					decor.Name(w.name, decor.WCSyncSpaceR),
					decor.Any(func(decor.Statistics) string { return count(w.src.held.Load(), "split") }, decor.WCSyncSpace),
				),
				mpb.AppendDecorators(
					decor.Percentage(decor.WCSyncSpace),
					decor.CountersNoUnit("%d / %d", decor.WCSyncSpace),
					decor.EwmaSpeed(0, "%.0f/s", 30, decor.WCSyncSpace),
					decor.Any(func(decor.Statistics) string { return d.state(w) }, decor.WCSyncSpace),
				),
			))
		}
		d.overall = d.p.AddBar(max(1, d.ds.records),
			mpb.PrependDecorators(
				decor.Name("job", decor.WCSyncSpaceR),
				decor.Any(func(decor.Statistics) string { return "fleet-wide" }, decor.WCSyncSpace),
			),
			mpb.AppendDecorators(
				decor.Percentage(decor.WCSyncSpace),
				decor.CountersNoUnit("%d / %d", decor.WCSyncSpace),
				decor.EwmaSpeed(0, "%.0f/s", 30, decor.WCSyncSpace),
				decor.Elapsed(decor.ET_STYLE_GO, decor.WCSyncSpace),
			),
		)
	}
	go d.sample()
}

// state is a worker's state, coloured.
func (d *display) state(w *worker) string {
	s := w.state.Load()
	c := ""
	switch s {
	case stateCompleted:
		c = green
	case stateCrashed, stateFailed:
		c = red
	case stateInterrupted:
		c = yellow
	}
	if c == "" {
		return stateName(s)
	}
	return tty.Paint(d.color, c, stateName(s))
}

// sample refreshes bars until finish.
func (d *display) sample() {
	defer close(d.done)
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	last := time.Now()
	lastPlain := last
	for {
		select {
		case <-d.quit:
			d.update(time.Since(last))
			return
		case <-tick.C:
		}
		d.update(time.Since(last))
		last = time.Now()
		if d.mode == modePlain && time.Since(lastPlain) >= plainEvery {
			lastPlain = time.Now()
			d.mu.Lock()
			fmt.Fprintln(d.out, d.status())
			d.mu.Unlock()
		}
	}
}

// update takes one sample: each worker's deliveries against its share, and
// the ledger's fleet-wide count.
func (d *display) update(dt time.Duration) {
	if d.mode != modeBars {
		return
	}
	for i, w := range d.workers {
		d.bars[i].SetTotal(max(1, w.src.share.Load()), false)
		d.bars[i].EwmaSetCurrent(w.src.delivered.Load(), dt)
	}
	d.overall.EwmaSetCurrent(tallyOf(d.ds, d.sink.snapshot()).delivered, dt)
}

// status is one plain-mode progress report: the fleet-wide count, then each
// worker of this process (delivered of its share, and its splits while it
// runs, else its state), wrapped to lineWidth.
func (d *display) status() string {
	t := tallyOf(d.ds, d.sink.snapshot())
	items := []string{fmt.Sprintf("job %s of %s records (%s)", human(t.delivered), human(t.planned), percent(t.delivered, t.planned))}
	for _, w := range d.workers {
		now := count(w.src.held.Load(), "split")
		if s := w.state.Load(); s != stateRunning {
			now = stateName(s)
		}
		items = append(items, fmt.Sprintf("%s %s/%s %s", w.name, human(w.src.delivered.Load()), human(w.src.share.Load()), now))
	}
	stamp := fmt.Sprintf("[%5.1fs] ", time.Since(d.start).Seconds())
	return strings.Join(pack(stamp, items, " | ", len(stamp)), "\n")
}

// finish stops sampling, completes or aborts the bars, and waits for the
// final render. Call it once, after every worker's run returned.
func (d *display) finish() {
	close(d.quit)
	<-d.done
	if d.mode == modePlain {
		fmt.Fprintln(d.out, d.status())
	}
	if d.mode != modeBars {
		return
	}
	// A completed worker's bar completes (its total follows its share, so
	// mpb cannot know on its own); any other bar (a crashed worker, a job
	// that did not finish) is ended where it stands and stays on screen.
	for i, w := range d.workers {
		if w.state.Load() == stateCompleted {
			d.bars[i].SetTotal(w.src.share.Load(), true)
		} else {
			d.bars[i].Abort(false)
		}
	}
	if !d.overall.Completed() {
		d.overall.Abort(false)
	}
	d.p.Wait()
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
var percent = examplekit.Percent

// libraryLogger returns the logger of the library's records at the -log
// level: to standard error, except with bars, where records would break into
// the bars and go to a file instead (returned so it can be named and
// closed). -log off needs no file.
func libraryLogger(mode int, level string, stderr io.Writer) (*slog.Logger, *os.File, error) {
	if mode != modeBars || level == "off" {
		return examplekit.Logger(level, stderr), nil, nil
	}
	f, err := os.CreateTemp("", "backfill-*.log")
	if err != nil {
		return nil, nil, fmt.Errorf("library log file: %w", err)
	}
	return examplekit.Logger(level, f), f, nil
}
