// Command backfill is the library's main example: a bounded job that
// backfills a generated data set of a million records, divided among
// several workers, one of which crashes midway. It shows the guarantees the
// library makes: every record is delivered at least once (lost: 0), a crash
// replays at most one commit interval, and cooperative moves and runtime
// splits replay nothing.
//
// Run it with no arguments; it needs nothing installed:
//
//	go run ./examples/backfill
//
// It starts an embedded NATS server, plans 64 splits of uneven sizes, runs 4
// workers (each with its own hollywood engine, store connection and
// coordinator, run by driver.Run over a lanes.Source), crashes one at 40 %
// and ends with a report. Every delivery is recorded in the job's ledger
// (a second job on the same store) before the lane claims the next batch,
// so the report's counts are the whole job's, whichever process delivered
// them. The exit status is 0 only when the job completed and no record was
// lost, 3 when SIGINT or SIGTERM interrupted it (the report says how to
// resume).
//
// The worker is three pieces, the ones a job of your own writes: the plan
// (plan.go: lanes.Split ranges with weights), the read function (read.go:
// a lanes.ReadFunc that claims each batch before processing it) and the
// wiring (worker.go: a coordinator per worker and driver.Run). The rest
// is the demonstration: the ledger, the crash, the outage and the report.
//
// To divide one job among processes, start a NATS server (2.11 or later,
// with JetStream), build the example (so that kill -9 reaches the worker,
// not the go tool) and run it in several terminals; any of them, or a
// -verify run afterwards, proves from the ledger that nothing was lost,
// even if one was killed with kill -9 (each names its pid first):
//
//	go build -o backfill ./examples/backfill
//	./backfill -nats nats://127.0.0.1:4222 -instance a
//	./backfill -nats nats://127.0.0.1:4222 -instance b
//	./backfill -nats nats://127.0.0.1:4222 -verify
//
// Such a job stays on the store for -verify: the report's "kept:" line
// gives the coordctl delete-job commands that remove it and its ledger (a
// job of its own, <job>_ledger). -postgres DSN does the same on a
// PostgreSQL database. -outage 2s stops
// the embedded server for 2 s once half the records are delivered; lanes
// pause while their commits do not land, so the replay stays bounded.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Exit statuses.
const (
	exitOK          = 0 // the job completed and nothing was lost
	exitFailed      = 1 // loss, a failure, an unreachable store, a timeout
	exitBadFlags    = 2 // a flag mistake (the usage was printed)
	exitInterrupted = 3 // SIGINT or SIGTERM stopped the run; it can be resumed
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errTimeout is the cause of a run's context that reached -timeout.
var errTimeout = errors.New("-timeout reached")

// run is the whole program behind main: parse, run (or verify), report. It
// returns the exit status. -timeout bounds the whole run: the work stops a
// fifth of it (at most 15 s) early, so that the workers depart and the
// server stops in time, and a shutdown that still overruns is abandoned.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, errHelp) {
		return exitOK
	}
	if err != nil {
		return exitBadFlags
	}
	work, cancel := context.WithTimeoutCause(ctx, o.timeout-min(o.timeout/5, 15*time.Second), errTimeout)
	defer cancel()
	done := make(chan int, 1)
	go func() {
		var rep *report
		var err error
		if o.verify {
			rep, err = verify(work, o)
		} else {
			rep, err = backfill(work, o, stdout, stderr)
		}
		if err != nil {
			fmt.Fprintf(stderr, "backfill: %v\n", err)
			done <- exitFailed
			return
		}
		rep.write(stdout)
		done <- rep.exitStatus()
	}()
	select {
	case code := <-done:
		return code
	case <-time.After(o.timeout):
		fmt.Fprintf(stderr, "backfill: -timeout %s reached while the run was stopping; exiting without waiting for it\n", o.timeout)
		return exitFailed
	}
}
