package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/internal/examplekit"
	"github.com/spate-go/coordination/store/natsstore"
)

// Timing of every worker: examplekit's, and a commit twice a second.
const (
	leaseDuration = examplekit.LeaseDuration
	commitEvery   = 500 * time.Millisecond // the coordinator's watermark lags the sink's by at most this
)

// Outcomes of a worker's run.
const (
	stateRunning int32 = iota
	stateCompleted
	stateKilled
	stateFailed
)

// stateName names a worker state for the report.
func stateName(s int32) string {
	return [...]string{"running", "completed", "killed", "failed"}[s]
}

// worker is one member of the job: its own database handles, NATS
// connection, hollywood engine, coordinator and source, run by driver.Run. In
// production each worker is a process; here several may share one.
type worker struct {
	name  string
	coord *actors.Coordinator
	src   *source
	close func() error // closes the store and the database handles
	state atomic.Int32 // stateRunning etc.
}

// workerSetup is what every worker of a run shares.
type workerSetup struct {
	dbPath     string
	table      table
	page       int
	sinkResume bool
	nats       natsstore.Config
	tally      *tally
	log        *slog.Logger
}

// newWorker builds worker name. No coordination I/O happens until run.
func newWorker(name string, ws workerSetup) (w *worker, err error) {
	var closers []func() error
	closeAll := func() error {
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i]())
		}
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("worker %s: %w", name, err), closeAll())
		}
	}()
	// Its own handles, as a separate process would have: two connections to
	// read pages, one to write them (its lanes queue for it in Go).
	srcDB, err := openDB(ws.dbPath, 2)
	if err != nil {
		return nil, err
	}
	closers = append(closers, srcDB.Close)
	sinkDB, err := openDB(ws.dbPath, 1)
	if err != nil {
		return nil, err
	}
	closers = append(closers, sinkDB.Close)
	st, err := natsstore.New(ws.nats, leaseDuration)
	if err != nil {
		return nil, err
	}
	closers = append(closers, st.Close)
	c, err := examplekit.Spawn(st, examplekit.WorkerConfig(name, ws.log))
	if err != nil {
		return nil, err
	}
	log := ws.log.With("instance", name)
	src := newSource(name, newPager(srcDB, ws.table, ws.page), newSink(sinkDB, ws.table, name), ws.sinkResume, ws.tally, log)
	return &worker{name: name, coord: c, src: src, close: closeAll}, nil
}

// run runs the worker until the job is over for it, ctx ends, or it is
// killed, then closes its handles. It returns nil when the job completed or
// the worker was killed.
func (w *worker) run(ctx context.Context, p coordination.Planner) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(w.src.ctx, cancel)() // kill ends the run
	// The driver logs to the coordinator's logger, with the instance.
	err := driver.Run(ctx, w.coord, w.src, driver.WithPlanner(p), driver.WithCommitInterval(commitEvery))
	w.src.waitReaders()
	closeErr := w.close()
	switch {
	case w.state.Load() == stateKilled:
		return nil // a dead process reports nothing; its peers take over
	case err == nil && closeErr == nil && w.state.CompareAndSwap(stateRunning, stateCompleted):
		return nil
	}
	w.state.Store(stateFailed)
	return fmt.Errorf("worker %s: %w", w.name, errors.Join(err, closeErr))
}

// kill simulates a crash: the lanes' I/O ends at once (an in-flight page
// rolls back), the coordinator stops writing, and the run ends without a
// final commit or hand-back. The worker's leases expire and its peers resume
// its splits from the watermarks it last committed. It does nothing to a
// worker that is no longer running. Safe from any goroutine.
func (w *worker) kill() {
	if !w.state.CompareAndSwap(stateRunning, stateKilled) {
		return
	}
	w.coord.Abort() // first: once the run's context ends, its Shutdown must land nothing
	w.src.crash()   // also ends the run's context
}
