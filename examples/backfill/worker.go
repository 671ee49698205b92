package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/lanes"
	"github.com/spate-go/coordination/store"
)

// Timing of every worker. NATS expires keys with one-second granularity, so
// the lease cannot go below 2s; 3s keeps crash recovery quick: a dead
// worker's splits are claimable 3s after its last renewal, and
// RebalanceDelay 0 reassigns them at once.
const (
	leaseDuration = 3 * time.Second
	opTimeout     = time.Second
	commitEvery   = 500 * time.Millisecond // a crash replays at most this much per split
)

// workerConfig returns the coordinator configuration of worker name.
func workerConfig(name string, o *options, logger *slog.Logger) coordination.Config {
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = name
	cfg.LeaseDuration = leaseDuration
	cfg.OpTimeout = opTimeout
	cfg.ReplanInterval = 3 * time.Second
	cfg.ReconcileInterval = 2 * time.Second
	cfg.DrainDeadline = 2 * time.Second
	cfg.RebalanceDelay = 0
	cfg.MaxInFlight = o.lanes
	if !o.runtimeSplit {
		cfg.CutInterval = -1 // never cut
	}
	cfg.Logger = logger
	return cfg
}

// Worker states, for the progress lines and the report.
const (
	stateRunning int32 = iota
	stateCompleted
	stateInterrupted
	stateCrashed
	stateFailed
)

// stateNames names the worker states.
var stateNames = []string{"running", "completed", "interrupted", "crashed", "failed"}

// worker is one member of the job: its own store connection, hollywood
// engine, coordinator and lanes.Source, run by driver.Run. In a real
// deployment each worker is a process; here several may share one.
type worker struct {
	name  string
	run   string // unique per process run, in every ledger key
	c     *actors.Coordinator
	st    store.Store
	src   *lanes.Source[int64]
	sink  *ledger
	fleet *fleet
	pace  pace
	opts  []driver.Option

	ctx    context.Context // runWorker's; crashNow cancels it
	cancel context.CancelFunc
	dead   chan struct{} // closed by crashNow
	crash  sync.Once

	mu        sync.Mutex
	tenancies map[coordination.SplitID]*tenancy // guarded by mu
	seq       int                               // guarded by mu: tenancies started
	reading   map[coordination.SplitID]bool     // guarded by mu: splits whose read function runs

	delivered atomic.Int64 // records delivered, duplicates included
	state     atomic.Int32
}

// newWorker builds worker name on a store of its own from open; nothing
// runs until run.
func newWorker(ctx context.Context, name, runID string, o *options, open func() (store.Store, error), sink *ledger, f *fleet, logger *slog.Logger, plan coordination.Planner) (*worker, error) {
	st, err := open()
	if err != nil {
		return nil, err
	}
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("worker %s: hollywood engine: %w", name, err), st.Close())
	}
	c, err := actors.Spawn(engine, st, workerConfig(name, o, logger))
	if err != nil {
		return nil, errors.Join(err, st.Close())
	}
	w := &worker{
		name: name, run: runID, c: c, st: st, sink: sink, fleet: f, pace: newPace(o.pace),
		dead: make(chan struct{}), tenancies: map[coordination.SplitID]*tenancy{}, reading: map[coordination.SplitID]bool{},
	}
	w.ctx, w.cancel = context.WithCancel(ctx)
	// A cut leaves the residual at least two batches: less is not worth a
	// lane's start.
	w.src = lanes.NewSource(w.read, lanes.Options{
		Retries:     -1, // a ledger write fails only while the store is down: retry until it is back
		MinResidual: uint64(2 * w.pace.batch),
		Logger:      logger,
	})
	w.opts = []driver.Option{
		driver.WithPlanner(plan),
		driver.WithCommitInterval(commitEvery),
		driver.WithPauseAfter(o.pauseAfter),
		driver.WithLogger(logger),
	}
	return w, nil
}

// runWorker runs the worker until the job is over for it, its context ends or it
// crashes; it returns nil when it completed, crashed on purpose or was
// interrupted (see state).
func (w *worker) runWorker() error {
	defer w.cancel()
	err := driver.Run(w.ctx, w.c, w.src, w.opts...)
	closeErr := w.st.Close()
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

// interruptedOnly reports whether err is driver.Run's interruption by its
// context and nothing else (a final commit that did not land is joined to
// it and makes the run a failure).
func interruptedOnly(err error) bool {
	e, ok := err.(*coordination.Error)
	return ok && (errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded))
}

// crashNow simulates a crash: the lanes stop reading at once and the
// coordinator is aborted, writing nothing more. Nothing is committed or
// handed back: the worker's leases expire and peers resume its splits from
// their last commits.
func (w *worker) crashNow() {
	w.crash.Do(func() {
		close(w.dead)
		w.c.Abort()
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
