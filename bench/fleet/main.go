// Command fleet is the scale benchmark of a coordinated fleet: it runs
// workers built from the library's public API (actors.Spawn, the
// coordination.Coordinator handle, natsstore) against an embedded NATS
// server on loopback and prints one line per figure, each beside a
// baseline measured in the same run, with the ratio and the target:
//
//	F1 plan + seed N splits vs as many raw creates at the seeding's concurrency
//	F2 W workers claim N splits vs the raw writes those claims need, W goroutines
//	F3 that fleet idle: writes per worker per heartbeat and process CPU
//	F4 events a worker's watches deliver per second while everyone commits,
//	   with the other workers holding few and many splits
//	F5 Commit p50/p99 vs a raw KV Update of the same size, interleaved
//	F6 heap per split in one worker's view
//	F7 restart on an existing job: W workers claim N seeded splits (seeded
//	   untimed by a one-worker fleet that departs) vs the raw writes those
//	   claims need, W goroutines, and vs the store's floor: the same writes
//	   with W plain watchers of the keys the updates rewrite
//	F8 W workers started together on a new job, -f8runs times: balanced
//	   when every split is first held, and nothing moves afterwards
//
// -store postgres runs the same figures on pgstore against a throwaway
// PostgreSQL server (F5's baseline is then a raw UPDATE ... WHERE rev = $1
// on a plain table, and F3 adds the server's CPU and the rows of the job's
// tables written and removed per hour); -store nats,postgres runs both in
// one run, one after the other.
//
// Every store call is counted by a decorator around each worker's store, so
// the figures do not depend on the protocol's internals; the only key name
// the program knows is the plan record's ("plan" or "<family>.plan"), whose
// publication ends F1 and starts F2, and it recognises a split's keys by the
// planned ids under any key family. Each figure stops by itself: one that does not finish
// within -timeout prints "timeout after X". scripts/bench-fleet.sh runs it
// from a clean clone.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/spate-go/coordination"
)

// config is the parsed command line.
type config struct {
	splits      int
	workers     int
	maxInFlight int
	idle        time.Duration
	lease       time.Duration
	grace       time.Duration
	reconcile   time.Duration
	timeout     time.Duration
	f4few       int
	f4many      int
	f4window    time.Duration
	samples     int
	f8runs      int
	f8splits    int
	cpuprofile  string
	only        map[string]bool // nil: every figure
	stores      []string        // storeNATS, storePostgres, in run order
}

// figures names every figure in run order.
var figures = []string{"F1", "F6", "F2", "F3", "F7", "F8", "F4", "F5"}

// parseFlags reads args into a config and checks it.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.splits, "splits", 100_000, "splits of F1, F2, F3, F6 and F7")
	fs.IntVar(&c.workers, "workers", 8, "workers of F2, F3, F7 and F8")
	fs.IntVar(&c.maxInFlight, "maxinflight", coordination.MaxInFlightLimit, "MaxInFlight of every F2/F3/F7/F8 worker")
	fs.DurationVar(&c.idle, "idle", time.Minute, "F3's idle window")
	fs.DurationVar(&c.lease, "lease", 30*time.Second, "LeaseDuration (and the store's lease TTL); heartbeats run every lease/3")
	fs.DurationVar(&c.grace, "grace", coordination.DefaultConfig().StartupGrace, "StartupGrace of every worker (0 disables the startup grace window)")
	fs.DurationVar(&c.reconcile, "reconcile", 10*time.Minute, "ReconcileInterval (the sizing guidance asks for minutes at 100k splits)")
	fs.DurationVar(&c.timeout, "timeout", 15*time.Minute, "bound on each figure; one that runs longer prints \"timeout after X\"")
	fs.IntVar(&c.f4few, "f4few", 20, "F4: splits the observed worker holds, and each other worker in the first distribution")
	fs.IntVar(&c.f4many, "f4many", 400, "F4: splits each other worker holds in the second distribution")
	fs.DurationVar(&c.f4window, "f4window", 10*time.Second, "F4: counting window per distribution")
	fs.IntVar(&c.samples, "samples", 2000, "F5: commits timed (and as many raw updates)")
	fs.IntVar(&c.f8runs, "f8runs", 20, "F8: runs")
	fs.IntVar(&c.f8splits, "f8splits", 1000, "F8: splits of each run")
	fs.StringVar(&c.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	only := fs.String("only", "", "comma-separated figures to run, for example F1,F5 (default all)")
	stores := fs.String("store", storeNATS, "the stores to run every figure on, in order: nats (an embedded server), postgres (a throwaway PostgreSQL server) or nats,postgres")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	for st := range strings.SplitSeq(*stores, ",") {
		if st != storeNATS && st != storePostgres {
			return c, fmt.Errorf("-store: unknown store %q; use nats, postgres or nats,postgres", st)
		}
		c.stores = append(c.stores, st)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q; every setting is a flag (see -h)", fs.Arg(0))
	}
	if *only != "" {
		c.only = make(map[string]bool)
		for _, f := range strings.Split(*only, ",") {
			f = strings.ToUpper(strings.TrimSpace(f))
			if !slices.Contains(figures, f) {
				return c, fmt.Errorf("-only: unknown figure %q; use names from %s", f, strings.Join(figures, ","))
			}
			c.only[f] = true
		}
	}
	for _, r := range []struct {
		name string
		v    int
	}{{"-splits", c.splits}, {"-workers", c.workers}, {"-maxinflight", c.maxInFlight}, {"-f4few", c.f4few}, {"-f4many", c.f4many}, {"-samples", c.samples}, {"-f8runs", c.f8runs}, {"-f8splits", c.f8splits}} {
		if r.v < 1 {
			return c, fmt.Errorf("%s must be at least 1, got %d", r.name, r.v)
		}
	}
	for _, r := range []struct {
		name string
		v    time.Duration
	}{{"-idle", c.idle}, {"-timeout", c.timeout}, {"-f4window", c.f4window}} {
		if r.v <= 0 {
			return c, fmt.Errorf("%s must be positive, got %s", r.name, r.v)
		}
	}
	if c.grace < 0 {
		return c, fmt.Errorf("-grace must be >= 0, got %s", c.grace)
	}
	if c.lease < 2*time.Second {
		return c, fmt.Errorf("-lease must be at least 2s (natsstore's shortest lease TTL), got %s", c.lease)
	}
	return c, nil
}

// want reports whether figure f runs.
func (c config) want(f string) bool { return c.only == nil || c.only[f] }

func main() {
	c, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-fleet:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	endProfile, err := startProfile(c.cpuprofile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-fleet:", err)
		os.Exit(2)
	}
	err = run(ctx, c, os.Stdout)
	endProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-fleet:", err)
		stop()
		os.Exit(1)
	}
}

// startProfile starts a CPU profile written to path ("" profiles nothing)
// and returns the function that stops it.
func startProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "bench-fleet: -cpuprofile:", err)
		}
	}, nil
}

// run starts the server, runs the wanted figures in order and prints one
// line per figure to out. A figure that times out prints so and the run
// goes on; any other failure is printed, the run goes on, and run returns
// every such failure joined.
func run(ctx context.Context, c config, out io.Writer) error {
	var errs []error
	for _, kind := range c.stores {
		errs = append(errs, runOn(ctx, kind, c, out))
	}
	return errors.Join(errs...)
}

// runOn runs the wanted figures on one kind of store.
func runOn(ctx context.Context, kind string, c config, out io.Writer) error {
	e, err := startEnv(kind, c.lease, c.grace)
	if err != nil {
		return err
	}
	defer func() {
		if err := e.close(); err != nil {
			fmt.Fprintln(os.Stderr, "bench-fleet:", err)
		}
	}()
	fmt.Fprintf(out, "bench-fleet: store %s, splits %d, workers %d, lease %s, StartupGrace %s, reconcile %s, timeout %s per figure\n",
		kind, c.splits, c.workers, c.lease, c.grace, c.reconcile, c.timeout)
	r := &reporter{out: out}
	bounded := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, c.timeout) }

	if c.want("F1") || c.want("F6") {
		fctx, cancel := bounded()
		s, err := seed(fctx, e, c, "f1")
		if err != nil {
			r.of(first(c, "F1", "F6"))("", err)
		} else {
			if c.want("F1") {
				r.of("F1")(figureF1(fctx, e, c, s))
			}
			if c.want("F6") {
				cancel()
				fctx, cancel = bounded()
				r.of("F6")(figureF6(fctx, c, s))
			}
		}
		cancel()
		if s != nil {
			r.cleanup(s.f.stop())
		}
	}
	if c.want("F2") || c.want("F3") {
		fctx, cancel := bounded()
		cl, err := claim(fctx, e, c)
		if err != nil {
			r.of(first(c, "F2", "F3"))("", err)
		} else {
			r.of("F2")(figureF2(fctx, e, c, cl))
			if c.want("F3") {
				cancel()
				fctx, cancel = bounded()
				r.of("F3")(figureF3(fctx, e, c, cl))
			}
		}
		cancel()
		if cl != nil {
			r.cleanup(cl.f.stop())
		}
	}
	if c.want("F7") {
		fctx, cancel := bounded()
		r.of("F7")(figureF7(fctx, e, c))
		cancel()
	}
	if c.want("F8") {
		fctx, cancel := context.WithTimeout(ctx, time.Duration(c.f8runs)*c.timeout)
		r.of("F8")(figureF8(fctx, e, c))
		cancel()
	}
	if c.want("F4") {
		fctx, cancel := bounded()
		r.of("F4")(figureF4(fctx, e, c))
		cancel()
	}
	if c.want("F5") {
		fctx, cancel := bounded()
		r.of("F5")(figureF5(fctx, e, c))
		cancel()
	}
	return errors.Join(r.errs...)
}

// first returns the first of names the config wants.
func first(c config, names ...string) string {
	for _, n := range names {
		if c.want(n) {
			return n
		}
	}
	return names[0]
}

// reporter prints figure lines and collects failures.
type reporter struct {
	out  io.Writer
	errs []error
}

// of returns the reporter of figure name: it prints line, or "<name>
// timeout after ..." for a timeout, or "<name> error: ..." for any other
// failure (which run then returns).
func (r *reporter) of(name string) func(line string, err error) {
	return func(line string, err error) { r.report(name, line, err) }
}

// report prints one figure's outcome; see of.
func (r *reporter) report(name, line string, err error) {
	var te *timeoutError
	switch {
	case errors.As(err, &te):
		fmt.Fprintf(r.out, "%s %s\n", name, te)
	case err != nil:
		fmt.Fprintf(r.out, "%s error: %v\n", name, err)
		r.errs = append(r.errs, fmt.Errorf("%s: %w", name, err))
	default:
		fmt.Fprintln(r.out, line)
	}
}

// cleanup records a failure to remove a figure's data.
func (r *reporter) cleanup(err error) {
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("cleanup: %w", err))
	}
}
