package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/coordctl"
	"github.com/spate-go/coordination/internal/examplekit"
	"github.com/spate-go/coordination/store"
)

// jobOf returns the job name: -job, or one derived from the plan, so every
// process started with the same -splits and -records joins the same job
// and a rerun resumes it.
func jobOf(o *options, plan planner) string {
	if o.job != "" {
		return o.job
	}
	return jobName(plan.Fingerprint())
}

// backfill runs the job and returns its report. An error means the run could
// not start (no report). It keeps stage up to date (see examplekit.Bounded);
// the work ends examplekit.ShutdownReserve before -timeout, so that the
// workers depart and the server stops within it.
func backfill(ctx context.Context, o *options, mode int, stdout, stderr io.Writer, stage *examplekit.Stage) (*report, error) {
	ctx, cancel := examplekit.WorkContext(ctx, o.Timeout)
	defer cancel()

	ds := datasetOf(o)
	plan := planner{ds: ds}
	job := jobOf(o, plan)
	srv, err := openNATS(o, job, stage, stderr)
	if err != nil {
		return nil, err
	}
	defer srv.close(stage, stderr)
	stage.Set("opening the job's ledger")
	sink, err := srv.openLedger(ctx, job)
	if err != nil {
		return nil, err
	}
	defer sink.close()

	disp := newDisplay(mode, stdout, sink, ds)
	logger, logFile, err := libraryLogger(mode, o.Log, stderr)
	if err != nil {
		return nil, err
	}
	if logFile != nil {
		defer logFile.Close()
	}
	f := newFleet(disp.note)
	reg, metricsAt, stopMetrics, err := startMetrics(o.metrics)
	if err != nil {
		return nil, err
	}
	defer stopMetrics()
	workers, err := newWorkers(o, srv.storeOpener(job), sink, f, logger, reg)
	if err != nil {
		return nil, err
	}

	before := tallyOf(ds, sink.snapshot())
	disp.note(fmt.Sprintf("backfill pid %d (spate coordination v%s): %s in %s, %s here", os.Getpid(), coordination.Version,
		count(o.records, "record"), count(o.splits, "split"), count(len(workers), "worker")))
	disp.note(fmt.Sprintf("job %q on %s", job, srv.where))
	disp.note(ds.describe())
	if before.deliveries > 0 {
		disp.note(fmt.Sprintf("resuming: the ledger already holds %s of %s", count(before.delivered, "record"), human(before.planned)))
	}
	if logFile != nil {
		disp.note("library logs: " + logFile.Name())
	}
	if metricsAt != "" {
		disp.note("metrics at " + metricsAt)
	}

	stage.Set("running the workers")
	start := time.Now()
	meter := &idleMeter{workers: workers, lanes: o.lanes, planned: ds.records - before.delivered}
	errs := runFleet(ctx, o, plan, sink, workers, f, srv, disp, meter, stderr)
	elapsed := time.Since(start)
	stage.Set("reading the ledger")
	if err := sink.refresh(context.WithoutCancel(ctx)); err != nil {
		errs = append(errs, err)
	}
	timedOut := examplekit.TimedOut(ctx)
	rep := newReport(o.Instance, ds, tallyOf(ds, sink.snapshot()), workers, f, elapsed, errs, ctx.Err() != nil && !timedOut)
	rep.Resume = srv.resumeHint()
	rep.TailIdle = meter.idle
	rep.Ideal = idealMakespan(ds.records-before.delivered, len(workers)*o.lanes, o.pace)
	if timedOut {
		rep.Errors = append(rep.Errors, fmt.Sprintf("gave up after -timeout %s (the work stops %s before it, to shut down within it)", o.Timeout, examplekit.ShutdownReserve(o.Timeout)))
		rep.Outcome = outcomeFailed
	}
	if o.audit && rep.Outcome == outcomeOK {
		stage.Set("auditing the job")
		auditJob(context.WithoutCancel(ctx), srv.ctlFlags(job), rep)
	}
	if rep.Outcome == outcomeOK && o.Instance == "" {
		stage.Set("removing the completed job")
		srv.jobCompleted(context.WithoutCancel(ctx), job, stderr)
	}
	return rep, nil
}

// newWorkers builds this process's workers of the job, each with a store of
// its own from open: the one -instance names, or a fleet of -workers.
func newWorkers(o *options, open func() (store.Store, error), sink *ledger, f *fleet, logger *slog.Logger, reg prometheus.Registerer) ([]*worker, error) {
	runID := randomHex(4)
	var workers []*worker
	lc := laneConfig{pace: newReadPace(o.pace), pauseAfter: o.pauseAt, lanes: o.lanes, runtimeSplit: o.runtimeSplit}
	for _, name := range o.Names(o.workers) {
		w, err := newWorker(name, runID, open, sink, lc, f, logger, reg)
		if err != nil {
			return nil, err
		}
		workers = append(workers, w)
	}
	return workers, nil
}

// runFleet runs the workers, and the crash and the outage the flags ask for,
// until every worker's run returned; it returns the workers' errors.
func runFleet(ctx context.Context, o *options, plan planner, sink *ledger, workers []*worker, f *fleet, srv *natsServer, disp *display, meter *idleMeter, stderr io.Writer) []error {
	disp.run(workers)
	defer disp.finish()
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Go(func() { errs[i] = w.run(ctx, plan) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var faults sync.WaitGroup
	faults.Go(func() { meter.run(ctx, done) })
	if o.Instance == "" && o.crashAt > 0 {
		faults.Go(func() { crashAtFraction(ctx, done, o.crashAt, plan.ds, sink, workers, f, disp.note) })
	}
	if o.outage > 0 {
		faults.Go(func() {
			if err := outageAtFraction(ctx, done, o.outageAt, o.outage, plan.ds, sink, srv.embedded, disp.note); err != nil {
				fmt.Fprintf(stderr, "backfill: %v\n", err)
			}
		})
	}
	faults.Wait()
	wg.Wait()
	return errs
}

// idealMakespan is the wall time of records read by lanes lanes at pace
// records per second each with none ever idle: the bound a perfect division
// of the work reaches.
func idealMakespan(records int64, lanes int, pace int64) time.Duration {
	if lanes < 1 || pace < 1 {
		return 0
	}
	return time.Duration(float64(records) / float64(int64(lanes)*pace) * float64(time.Second))
}

// auditJob runs coordctl audit on the job and adds its lines to rep; a
// violation, or an audit that could not run, fails the run.
func auditJob(ctx context.Context, conn []string, rep *report) {
	var out bytes.Buffer
	code := coordctl.Run(ctx, append([]string{"audit"}, conn...), &out, &out)
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

// randomHex returns 2n random lowercase hex characters.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
