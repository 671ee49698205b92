package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// Display modes.
const (
	modeBars  = iota // live progress bars (stdout is a terminal)
	modePlain        // a plain status line every plainEvery (stdout is a pipe or file)
	modeQuiet        // nothing but the final report
)

const (
	sampleEvery = 200 * time.Millisecond // bar refresh and rate sampling
	plainEvery  = time.Second            // status line cadence in plain mode
)

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// display shows the run's progress: a bar per worker and one overall (records
// done, splits held, rate) with mpb on a terminal, plain periodic lines
// otherwise, and the event log (crash, recoveries, moves) above them.
type display struct {
	mode    int
	out     io.Writer
	sink    *ledger
	workers []*worker
	start   time.Time

	mu sync.Mutex // serialises plain-mode writes

	p       *mpb.Progress
	bars    []*mpb.Bar
	overall *mpb.Bar
	rates   []atomic.Int64 // records per second per worker, then overall
	last    []int64        // previous sample per worker, then overall; sampler only

	quit chan struct{} // closed by finish
	done chan struct{} // closed when the sampler has exited
}

// newDisplay prepares a display of mode on out. Workers are attached with
// attach before start.
func newDisplay(mode int, out io.Writer, sink *ledger) *display {
	d := &display{mode: mode, out: out, sink: sink, quit: make(chan struct{}), done: make(chan struct{})}
	if mode == modeBars {
		d.p = mpb.New(mpb.WithOutput(out), mpb.WithWidth(36), mpb.WithRefreshRate(sampleEvery))
	}
	return d
}

// logWriter is where library logs go: above the bars, or standard error.
func (d *display) logWriter() io.Writer {
	if d.mode == modeBars {
		return d.p
	}
	return os.Stderr
}

// note writes one event line, stamped with the time since start.
func (d *display) note(line string) {
	stamp := fmt.Sprintf("[%5.1fs] ", time.Since(d.start).Seconds())
	if d.start.IsZero() {
		stamp = ""
	}
	switch d.mode {
	case modeBars:
		fmt.Fprintln(d.p, stamp+line)
	case modePlain:
		d.mu.Lock()
		fmt.Fprintln(d.out, stamp+line)
		d.mu.Unlock()
	}
}

// run attaches the workers, adds their bars and starts sampling.
func (d *display) run(workers []*worker) {
	d.workers = workers
	d.start = time.Now()
	d.rates = make([]atomic.Int64, len(workers)+1)
	d.last = make([]int64, len(workers)+1)
	total := max(1, d.sink.planned())
	if d.mode == modeBars {
		for i, w := range workers {
			d.bars = append(d.bars, d.p.AddBar(total,
				mpb.PrependDecorators(
					decor.Name(w.name, decor.WCSyncSpaceR),
					decor.Any(func(decor.Statistics) string { return fmt.Sprintf("%2d splits", w.held.Load()) }, decor.WCSyncSpace),
				),
				mpb.AppendDecorators(
					decor.Any(func(decor.Statistics) string { return d.workerStatus(i) }, decor.WCSyncSpaceR),
				),
			))
		}
		d.overall = d.p.AddBar(total,
			mpb.PrependDecorators(
				decor.Name("all", decor.WCSyncSpaceR),
				decor.Any(func(decor.Statistics) string { return fmt.Sprintf("%2d splits", d.heldTotal()) }, decor.WCSyncSpace),
			),
			mpb.AppendDecorators(
				decor.Any(func(decor.Statistics) string { return d.overallStatus() }, decor.WCSyncSpaceR),
			),
		)
	}
	go d.sample()
}

// sample refreshes bars and rates until finish.
func (d *display) sample() {
	defer close(d.done)
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	lastPlain := time.Now()
	for {
		select {
		case <-d.quit:
			d.update(sampleEvery)
			return
		case <-tick.C:
		}
		d.update(sampleEvery)
		if d.mode == modePlain && time.Since(lastPlain) >= plainEvery {
			lastPlain = time.Now()
			d.mu.Lock()
			fmt.Fprintln(d.out, d.statusLine())
			d.mu.Unlock()
		}
	}
}

// update takes one sample: per-worker deliveries and overall unique records,
// rates smoothed over a few samples.
func (d *display) update(dt time.Duration) {
	n := len(d.workers)
	for i := range n + 1 {
		var cur int64
		if i < n {
			cur = d.sink.byWorker(d.workers[i].index)
		} else {
			cur = d.sink.delivered()
		}
		inst := float64(cur-d.last[i]) / dt.Seconds()
		d.last[i] = cur
		old := float64(d.rates[i].Load())
		d.rates[i].Store(int64(0.6*old + 0.4*inst))
		if d.mode == modeBars {
			if i < n {
				d.bars[i].SetCurrent(cur)
			} else {
				d.overall.SetCurrent(cur)
			}
		}
	}
}

// heldTotal returns the splits held by all workers of this process.
func (d *display) heldTotal() int64 {
	var n int64
	for _, w := range d.workers {
		n += w.held.Load()
	}
	return n
}

// workerStatus is the text after worker i's bar.
func (d *display) workerStatus(i int) string {
	w := d.workers[i]
	delivered := d.sink.byWorker(w.index)
	switch s := w.state.Load(); s {
	case stateRunning:
		return fmt.Sprintf("%7s records %9s", human(delivered), human(d.rates[i].Load())+"/s")
	default:
		return fmt.Sprintf("%7s records %9s", human(delivered), stateName(s))
	}
}

// overallStatus is the text after the overall bar.
func (d *display) overallStatus() string {
	return fmt.Sprintf("%7s records %9s  %s of %s  %.0fs",
		human(d.sink.delivered()), human(d.rates[len(d.workers)].Load())+"/s",
		percent(d.sink.delivered(), d.sink.planned()), human(d.sink.planned()), time.Since(d.start).Seconds())
}

// statusLine is one plain-mode progress line.
func (d *display) statusLine() string {
	line := fmt.Sprintf("[%5.1fs] %s of %s records (%s), %s/s, %d splits held |",
		time.Since(d.start).Seconds(), human(d.sink.delivered()), human(d.sink.planned()),
		percent(d.sink.delivered(), d.sink.planned()), human(d.rates[len(d.workers)].Load()), d.heldTotal())
	for i, w := range d.workers {
		if s := w.state.Load(); s != stateRunning {
			line += fmt.Sprintf(" %s %s %s |", w.name, human(d.sink.byWorker(w.index)), stateName(s))
			continue
		}
		line += fmt.Sprintf(" %s %s %d splits %s/s |", w.name, human(d.sink.byWorker(w.index)), w.held.Load(), human(d.rates[i].Load()))
	}
	return line
}

// finish stops sampling, completes or aborts the bars, and waits for the
// final render. Call it once, after every worker's run returned.
func (d *display) finish() {
	close(d.quit)
	<-d.done
	if d.mode == modePlain {
		fmt.Fprintln(d.out, d.statusLine())
	}
	if d.mode != modeBars {
		return
	}
	// Worker bars keep their length (each worker's share of the job); a bar
	// that did not fill up is ended where it stands and stays on screen.
	for _, b := range append(d.bars, d.overall) {
		b.Abort(false)
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
func percent(part, whole int64) string {
	if whole == 0 {
		return "100%"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(part)/float64(whole))
}
