package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/internal/examplekit"
	"github.com/spate-go/coordination/store"
)

// Timing of every worker: examplekit's, and a commit twice a second.
const (
	leaseDuration = examplekit.LeaseDuration
	opTimeout     = examplekit.OpTimeout
	commitEvery   = 500 * time.Millisecond // a crash replays at most this much per split
)

// workerConfig returns the coordinator configuration of worker name,
// exporting its metrics to reg when it is not nil.
func workerConfig(name string, logger *slog.Logger, reg prometheus.Registerer) coordination.Config {
	cfg := examplekit.WorkerConfig(name, logger)
	cfg.Metrics = reg
	return cfg
}

// laneConfig is what the flags set of each worker's lanes.
type laneConfig struct {
	pace         readPace      // how fast a lane reads
	pauseAfter   time.Duration // driver.WithPauseAfter; 0 is the default
	lanes        int           // Config.MaxInFlight; 0 keeps the default
	runtimeSplit bool          // the source cuts lanes when asked
}

// Outcomes of a worker's run.
const (
	stateRunning int32 = iota
	stateCompleted
	stateInterrupted
	stateCrashed
	stateFailed
)

// stateName names a worker state for the progress display and the report.
func stateName(s int32) string {
	switch s {
	case stateRunning:
		return "running"
	case stateCompleted:
		return "completed"
	case stateInterrupted:
		return "interrupted"
	case stateCrashed:
		return "crashed"
	default:
		return "failed"
	}
}

// worker is one member of the job: its own hollywood engine, NATS connection
// (a natsstore.Store or a pgstore.Store), coordinator and source, run by driver.Run. In a real
// deployment each worker is a process; here several may run in one process
// and share nothing but the ledger's connection.
type worker struct {
	name string // instance id

	c          coordination.Coordinator
	abort      func()       // the coordinator's Abort
	closeStore func() error // drops the NATS connection
	src        *source
	log        *slog.Logger

	pauseAfter time.Duration // driver.WithPauseAfter; 0 is the default

	cancel context.CancelFunc // ends run's context; set by run
	ready  chan struct{}      // closed once run has set cancel
	dead   chan struct{}      // closed once by crashNow: lanes stop at once
	crash  sync.Once

	state atomic.Int32 // stateRunning etc.
}

// newWorker builds worker name on a store of its own from open. No I/O
// happens until run.
func newWorker(name, run string, open func() (store.Store, error), sink *ledger, lc laneConfig, f *fleet,
	logger *slog.Logger, reg prometheus.Registerer) (*worker, error) {
	st, err := open()
	if err != nil {
		return nil, err
	}
	cfg := workerConfig(name, logger, reg)
	if lc.lanes > 0 {
		cfg.MaxInFlight = lc.lanes
	}
	c, err := examplekit.Spawn(st, cfg)
	if err != nil {
		return nil, errors.Join(err, st.Close())
	}
	w := assemble(c.InstanceID(), run, c, c.Abort, st.Close, sink, lc.pace, f, logger)
	w.pauseAfter = lc.pauseAfter
	w.src.noCut = !lc.runtimeSplit
	return w, nil
}

// assemble wires a worker around coordinator c and its source. abort crashes
// c; closeStore drops its store connection.
func assemble(name, run string, c coordination.Coordinator, abort func(), closeStore func() error,
	sink *ledger, pace readPace, f *fleet, logger *slog.Logger) *worker {
	w := &worker{
		name:       name,
		c:          c,
		abort:      abort,
		closeStore: closeStore,
		log:        logger,
		ready:      make(chan struct{}),
		dead:       make(chan struct{}),
	}
	w.src = newSource(name, run, sink, pace, w.dead, f)
	return w
}

// crashNow simulates a crash: the lanes stop reading at once and the
// coordinator is aborted, writing nothing more. Nothing is committed or
// handed back: the worker's leases expire and peers take its splits over from
// their last committed watermarks. Safe to call from any goroutine once run
// was called.
func (w *worker) crashNow() {
	w.crash.Do(func() {
		close(w.dead)
		w.abort()
		<-w.ready
		w.cancel() // driver.Run returns; its shutdown calls fail on the aborted coordinator
	})
}

// crashed reports whether crashNow was called.
func (w *worker) crashed() bool {
	select {
	case <-w.dead:
		return true
	default:
		return false
	}
}

// run runs the worker until the job is over for it, ctx ends or it crashes,
// and returns nil when it completed, crashed on purpose or was interrupted
// (see state).
func (w *worker) run(ctx context.Context, p coordination.Planner) error {
	ctx, w.cancel = context.WithCancel(ctx)
	defer w.cancel()
	close(w.ready)
	err := driver.Run(ctx, w.c, w.src,
		driver.WithPlanner(p),
		driver.WithCommitInterval(commitEvery),
		driver.WithPauseAfter(w.pauseAfter),
		driver.WithLogger(w.log))
	w.src.wait()
	closeErr := w.closeStore()
	switch {
	case w.crashed():
		w.state.Store(stateCrashed) // a dead process's connection just goes away
		return nil
	case err == nil:
		w.state.Store(stateCompleted)
	case interruptedOnly(err):
		w.state.Store(stateInterrupted)
		err = nil
	default:
		w.state.Store(stateFailed)
	}
	if err = errors.Join(err, closeErr); err != nil {
		return fmt.Errorf("worker %s: %w", w.name, err)
	}
	return nil
}

// interruptedOnly reports whether err is driver.Run's interruption by a
// cancelled context and nothing else (a final commit that did not land is
// joined to it and makes the run a failure).
func interruptedOnly(err error) bool {
	e, ok := err.(*coordination.Error)
	return ok && errors.Is(e.Err, context.Canceled)
}
