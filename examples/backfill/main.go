// Command backfill is the library's main example: a bounded job that
// backfills a generated data set of about a million records, divided among
// several workers coordinated through NATS JetStream, one of which crashes
// midway. It shows the guarantees the library makes: every record is
// delivered at least once (lost = 0), a crash replays at most one commit
// interval, and cooperative moves replay nothing.
//
// Run it with no arguments:
//
//	go run ./examples/backfill
//
// It starts an embedded NATS server, plans 64 splits of uneven sizes, runs 4
// workers (each with its own hollywood engine, NATS connection and
// coordinator, run by driver.Run), crashes one at 40 %, and ends with a
// report, whose last step audits the job's write history as coordctl audit
// does (-audit=false skips it). Every delivery is recorded in the job's ledger (a KV bucket on
// the same server) before it is acknowledged, so the report's counts are
// the whole job's, whichever process delivered them. The exit status is 0
// only when the job completed and no record was lost; 3 when SIGINT or
// SIGTERM interrupted it (run again to resume).
//
// To divide one job among processes, start a NATS server (2.11 or later,
// with JetStream) and run in several terminals; any of them, or a -verify
// run afterwards, proves from the ledger that nothing was lost, even if one
// was killed with kill -9:
//
//	go run ./examples/backfill -nats nats://127.0.0.1:4222 -instance a
//	go run ./examples/backfill -nats nats://127.0.0.1:4222 -instance b
//	go run ./examples/backfill -nats nats://127.0.0.1:4222 -verify
//
// To see what a NATS outage costs, -outage 2s stops the embedded server
// once -outage-at (half) of the records is delivered and restarts it on the
// same store 2 s later; lanes pause while their commits do not land
// (-pause-after), so the replay stays bounded. scripts/bench-outage.sh
// measures it against a run without an outage.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/coordctl"
	"github.com/spate-go/coordination/store/natsstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the parsed flags.
type options struct {
	workers  int
	splits   int
	records  int64
	crashAt  float64
	outage   time.Duration
	outageAt float64
	pauseAt  time.Duration
	natsURL  string
	instance string
	job      string
	metrics  string
	pace     int64
	timeout  time.Duration
	logLevel string
	quiet    bool
	plain    bool
	verify   bool
	audit    bool
	data     string
}

// usageText heads the -h output and every flag error.
const usageText = `usage: backfill [flags]

Backfills a generated data set with several coordinated workers and reports
records planned, delivered, duplicated and lost, for the whole job: every
delivery is recorded in the job's ledger in NATS before it is acknowledged.
With no flags it runs 4 workers against an embedded NATS server and crashes
one of them at 40%. An interrupted run (SIGINT, SIGTERM, kill -9) resumes
when run again with the same flags.

Exit status: 0 when the job completed and nothing was lost, 1 on loss,
failure or unreachable NATS, 2 on bad flags, 3 when interrupted by SIGINT
or SIGTERM (run again to resume).

flags:
`

// parseFlags parses args. Errors have already been printed with the usage.
func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("backfill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	fs.IntVar(&o.workers, "workers", 4, "workers to run in this process (ignored with -instance)")
	fs.IntVar(&o.splits, "splits", 64, "splits to cut the data set into")
	fs.Int64Var(&o.records, "records", 1_000_000, "records in the data set")
	fs.Float64Var(&o.crashAt, "crash-at", 0.4, "crash one worker (Abort) when this fraction of the records is delivered; 0 disables (not used with -instance)")
	fs.DurationVar(&o.outage, "outage", 0, "stop the embedded NATS server for this long once -outage-at of the records is delivered, then restart it on the same store; 0 disables (not with -nats)")
	fs.Float64Var(&o.outageAt, "outage-at", 0.5, "fraction of the records delivered when -outage starts")
	fs.DurationVar(&o.pauseAt, "pause-after", 0, "how long a lane reads on while its commits are not landing before its intake pauses (driver.WithPauseAfter); 0 means one commit interval")
	fs.StringVar(&o.natsURL, "nats", "", "NATS server URL (nats://host:port) instead of the embedded server")
	fs.StringVar(&o.instance, "instance", "", "run one worker with this instance id against -nats; start several processes to divide one job")
	fs.StringVar(&o.job, "job", "", "job name (NATS bucket suffix); default derived from -splits and -records")
	fs.StringVar(&o.metrics, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics (for example 127.0.0.1:9100)")
	fs.Int64Var(&o.pace, "pace", 2000, "records per second each lane reads")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up (and report what was lost) after this long")
	fs.StringVar(&o.logLevel, "log", "warn", "library log level: debug, info, warn, error or off")
	fs.BoolVar(&o.quiet, "quiet", false, "print only the final report")
	fs.BoolVar(&o.plain, "plain", false, "plain progress lines instead of bars even on a terminal")
	fs.BoolVar(&o.verify, "verify", false, "only read the job's ledger on -nats and report whether every record was delivered (same -splits, -records or -job as the run)")
	fs.BoolVar(&o.audit, "audit", true, "after a completed run, audit the job's write history like coordctl audit (fencing invariants per split) and fail on a violation")
	fs.StringVar(&o.data, "data", "", "store directory of the embedded NATS server, kept until the job completes so a rerun resumes (default: a directory per job under the system temp dir)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	bad := func(format string, a ...any) (*options, error) {
		err := fmt.Errorf(format, a...)
		fmt.Fprintf(stderr, "backfill: %v\n\n", err)
		fs.Usage()
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return bad("unexpected argument %q (all settings are flags)", fs.Arg(0))
	case o.workers < 1 || o.workers > 64:
		return bad("-workers must be 1..64, got %d", o.workers)
	case o.splits < 1 || o.splits > 100_000:
		return bad("-splits must be 1..100000, got %d", o.splits)
	case o.records < 0 || o.records > 100_000_000:
		return bad("-records must be 0..100000000, got %d", o.records)
	case o.crashAt < 0 || o.crashAt >= 1:
		return bad("-crash-at must be a fraction in [0, 1), got %g", o.crashAt)
	case o.outage < 0:
		return bad("-outage must not be negative, got %s", o.outage)
	case o.outage > 0 && o.natsURL != "":
		return bad("-outage stops the embedded NATS server; it cannot be used with -nats")
	case o.outageAt <= 0 || o.outageAt >= 1:
		return bad("-outage-at must be a fraction in (0, 1), got %g", o.outageAt)
	case o.pauseAt < 0:
		return bad("-pause-after must not be negative, got %s", o.pauseAt)
	case o.pace < 1:
		return bad("-pace must be at least 1 record per second, got %d", o.pace)
	case o.timeout <= 0:
		return bad("-timeout must be positive, got %s", o.timeout)
	case o.verify && o.natsURL == "":
		return bad("-verify needs -nats: it reads the job's ledger on that server")
	case o.instance != "" && o.natsURL == "":
		return bad("-instance needs -nats: the processes of one job must share a NATS server")
	case o.instance == "" && o.crashAt > 0 && o.workers < 2:
		return bad("-crash-at needs at least 2 workers (someone must recover the crashed worker's splits); use -crash-at 0")
	case o.natsURL != "" && !strings.HasPrefix(o.natsURL, "nats://") && !strings.HasPrefix(o.natsURL, "tls://"):
		return bad("-nats must be a nats:// or tls:// URL, got %q", natsstore.RedactURL(o.natsURL))
	}
	if _, ok := logLevels[o.logLevel]; !ok {
		return bad("-log must be debug, info, warn, error or off, got %q", o.logLevel)
	}
	if o.instance != "" {
		cfg := coordination.DefaultConfig()
		cfg.InstanceID = o.instance
		if err := cfg.Validate(); err != nil {
			return bad("-instance: %v", err)
		}
	}
	if o.job != "" {
		if _, err := natsstore.New(natsstore.Config{Servers: []string{"nats://127.0.0.1"}, Job: o.job}, leaseDuration); err != nil {
			return bad("-job: %v", err)
		}
	}
	return o, nil
}

// logLevels maps -log to a level; "off" discards.
var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError, "off": slog.LevelError + 100,
}

// run is the whole program behind main: parse, run, report. It returns the
// exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	mode := modePlain
	tty := stdout == io.Writer(os.Stdout) && isTerminal(os.Stdout)
	switch {
	case o.quiet:
		mode = modeQuiet
	case !o.plain && tty:
		mode = modeBars
	}
	var rep *report
	if o.verify {
		rep, err = verify(ctx, o)
	} else {
		rep, err = backfill(ctx, o, mode, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "backfill: %v\n", err)
		return 1
	}
	rep.Color = tty && colorOn(os.Stdout)
	rep.write(stdout)
	return exitStatus(rep.Outcome)
}

// jobOf returns the job name: -job, or one derived from the plan, so every
// process started with the same -splits and -records joins the same job
// and a rerun resumes it.
func jobOf(o *options, plan planner) string {
	if o.job != "" {
		return o.job
	}
	return jobName(plan.Fingerprint())
}

// verify reads the job's ledger on -nats and reports on it alone.
func verify(ctx context.Context, o *options) (*report, error) {
	ds := newDataset(o.splits, o.records)
	sink, err := openLedger(ctx, o.natsURL, jobOf(o, planner{ds: ds}))
	if err != nil {
		return nil, err
	}
	defer sink.close()
	rep := newReport("", ds, tallyOf(ds, sink.snapshot()), nil, nil, 0, nil, false)
	rep.Verify = true
	if rep.Lost() > 0 {
		rep.Outcome = outcomeFailed
	}
	return rep, nil
}

// backfill runs the job and returns its report. An error means the run could
// not start (no report).
func backfill(ctx context.Context, o *options, mode int, stdout, stderr io.Writer) (*report, error) {
	signals := ctx
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	ds := newDataset(o.splits, o.records)
	plan := planner{ds: ds}
	job := jobOf(o, plan)

	url := o.natsURL
	dataDir := ""
	var embedded *embeddedServer
	removeStore := false // set once the job completed: the embedded store goes after the server
	if url == "" {
		dataDir = o.data
		if dataDir == "" {
			dataDir = filepath.Join(os.TempDir(), "spate-"+job)
		}
		srv, err := startEmbedded(dataDir)
		if err != nil {
			return nil, err
		}
		defer func() {
			srv.Close()
			if removeStore {
				if err := os.RemoveAll(dataDir); err != nil {
					fmt.Fprintf(stderr, "backfill: removing the embedded store: %v\n", err)
				}
			}
		}()
		url = srv.URL()
		embedded = srv
	}
	sink, err := openLedger(ctx, url, job)
	if err != nil {
		return nil, err
	}
	defer sink.close()

	names := []string{o.instance}
	if o.instance == "" {
		names = names[:0]
		for i := range o.workers {
			names = append(names, fmt.Sprintf("w%d", i+1))
		}
	}

	disp := newDisplay(mode, mode == modeBars && colorOn(os.Stdout), stdout, sink, ds)
	logs, logFile, err := logWriter(mode, o.logLevel, stderr)
	if err != nil {
		return nil, err
	}
	if logFile != nil {
		defer logFile.Close()
	}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: logLevels[o.logLevel]}))
	f := newFleet(disp.note)

	var reg *prometheus.Registry
	var metricsAt string
	if o.metrics != "" {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		bound, stopMetrics, err := serveMetrics(o.metrics, reg)
		if err != nil {
			return nil, err
		}
		defer stopMetrics()
		metricsAt = "http://" + bound + "/metrics"
	}

	// History 64: the state bucket keeps up to 64 revisions per key, so the
	// final audit sees every write of a run of this size (a split's records
	// are written a few dozen times at most).
	natsCfg := natsstore.Config{Servers: []string{url}, Job: job, History: 64}
	runID := randomHex(4)
	workers := make([]*worker, 0, len(names))
	for _, name := range names {
		var r prometheus.Registerer
		if reg != nil {
			r = reg
		}
		w, err := newWorker(name, runID, natsCfg, sink, newReadPace(o.pace), o.pauseAt, f, logger, r)
		if err != nil {
			return nil, err
		}
		workers = append(workers, w)
	}

	where := "embedded NATS at " + url + " (store " + dataDir + ")"
	if o.natsURL != "" {
		where = "NATS at " + natsstore.RedactURL(url)
	}
	before := tallyOf(ds, sink.snapshot())
	disp.note(fmt.Sprintf("backfill %s v%s: %s in %s, %s in this process, job %q on %s",
		"github.com/spate-go/coordination", coordination.Version, count(o.records, "record"), count(o.splits, "split"), count(len(workers), "worker"), job, where))
	if before.deliveries > 0 {
		disp.note(fmt.Sprintf("resuming: the ledger already holds %s of %s", count(before.delivered, "record"), human(before.planned)))
	}
	if logFile != nil {
		disp.note("library logs: " + logFile.Name())
	}
	if metricsAt != "" {
		disp.note("metrics at " + metricsAt)
	}

	start := time.Now()
	disp.run(workers)
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Go(func() { errs[i] = w.run(ctx, plan) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var faults sync.WaitGroup
	if o.instance == "" && o.crashAt > 0 {
		faults.Go(func() { crashAtFraction(ctx, done, o.crashAt, ds, sink, workers, f, disp.note) })
	}
	if o.outage > 0 {
		faults.Go(func() {
			if err := outageAtFraction(ctx, done, o.outageAt, o.outage, ds, sink, embedded, disp.note); err != nil {
				fmt.Fprintf(stderr, "backfill: %v\n", err)
			}
		})
	}
	faults.Wait()
	wg.Wait()
	elapsed := time.Since(start)
	disp.finish()
	if err := sink.refresh(context.WithoutCancel(ctx)); err != nil {
		errs = append(errs, err)
	}
	rep := newReport(o.instance, ds, tallyOf(ds, sink.snapshot()), workers, f, elapsed, errs, signals.Err() != nil)
	if ctx.Err() != nil && signals.Err() == nil {
		rep.Errors = append(rep.Errors, fmt.Sprintf("gave up after -timeout %s", o.timeout))
		rep.Outcome = outcomeFailed
	}
	if o.audit && rep.Outcome == outcomeOK {
		auditJob(context.WithoutCancel(ctx), url, job, rep)
	}
	// A completed job run by a whole fleet in this process is removed, so a
	// rerun starts afresh: its buckets on an external server, or the
	// embedded server's store once the server is down. A job of several
	// processes (-instance) is left for -verify; an interrupted one for the
	// rerun that resumes it.
	switch {
	case rep.Outcome != outcomeOK || o.instance != "":
	case o.natsURL != "":
		if err := removeJob(context.WithoutCancel(ctx), url, job); err != nil {
			fmt.Fprintf(stderr, "backfill: %v\n", err)
		}
	default:
		removeStore = true
	}
	return rep, nil
}

// auditJob runs coordctl audit on the job and adds its lines to rep; a
// violation, or an audit that could not run, fails the run.
func auditJob(ctx context.Context, url, job string, rep *report) {
	var out bytes.Buffer
	code := coordctl.Run(ctx, []string{"audit", "-nats", url, "-job", job, "-lease", leaseDuration.String()}, &out, &out)
	rep.Audit = strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	switch code {
	case coordctl.ExitOK:
	case coordctl.ExitViolations:
		rep.Errors = append(rep.Errors, "the audit found fencing violations (see the audit lines)")
		rep.Outcome = outcomeFailed
	default:
		rep.Errors = append(rep.Errors, "the audit could not run (see the audit lines)")
		rep.Outcome = outcomeFailed
	}
}

// logWriter is where library logs go: standard error, except with bars,
// where they would break into the bars and go to a file instead (returned so
// it can be named and closed). -log off needs no file.
func logWriter(mode int, level string, stderr io.Writer) (io.Writer, *os.File, error) {
	if mode != modeBars || level == "off" {
		return stderr, nil, nil
	}
	f, err := os.CreateTemp("", "backfill-*.log")
	if err != nil {
		return nil, nil, fmt.Errorf("library log file: %w", err)
	}
	return f, f, nil
}

// crashAtFraction waits until frac of the records are delivered, then crashes
// the worker holding the most splits. It returns after the crash, when done is
// closed, or when ctx ends.
func crashAtFraction(ctx context.Context, done <-chan struct{}, frac float64, ds *dataset, sink *ledger, workers []*worker, f *fleet, note func(string)) {
	var victim *worker
	var t tally
	if !waitUntil(ctx, done, func() bool {
		t = tallyOf(ds, sink.snapshot())
		victim = victimHolding(workers)
		return t.delivered >= int64(frac*float64(ds.records)) && victim != nil
	}) {
		return
	}
	victim.crashNow()
	held := f.crashed(victim.name)
	note(fmt.Sprintf("CRASH: %s aborted at %s delivered, holding %s (%s); its leases expire within %s",
		victim.name, percent(t.delivered, t.planned), count(len(held), "split"), joinIDs(held), leaseDuration))
}

// outageAtFraction waits until frac of the records are delivered, then
// stops the embedded server for d and restarts it on the same store. It
// returns after the restart, when done is closed, or when ctx ends.
func outageAtFraction(ctx context.Context, done <-chan struct{}, frac float64, d time.Duration, ds *dataset, sink *ledger, srv *embeddedServer, note func(string)) error {
	var t tally
	if !waitUntil(ctx, done, func() bool {
		t = tallyOf(ds, sink.snapshot())
		return t.delivered >= int64(frac*float64(ds.records))
	}) {
		return nil
	}
	note(fmt.Sprintf("OUTAGE: NATS stopped at %s delivered, for %s", percent(t.delivered, t.planned), d))
	if err := srv.outage(ctx, d); err != nil {
		return fmt.Errorf("restarting the embedded NATS server after the outage: %w", err)
	}
	note("OUTAGE over: NATS restarted on the same store")
	return nil
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

// joinIDs renders split ids as a comma-separated list.
func joinIDs(ids []coordination.SplitID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ", ")
}

// serveMetrics serves reg at http://<bound>/metrics until the returned stop
// is called; bound is the address actually listened on (addr may use port 0).
func serveMetrics(addr string, reg *prometheus.Registry) (bound string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("-metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return ln.Addr().String(), func() {
		_ = srv.Close()
		<-done
	}, nil
}

// randomHex returns 2n random lowercase hex characters.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
