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
	"github.com/prometheus/client_golang/prometheus"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/store/natsstore"
)

// Timing of every worker. NATS expires keys on the server with one-second
// granularity, so the lease cannot go below 2s; 3s keeps crash recovery
// quick (a crashed worker's splits are claimable 3s after its last renewal
// and RebalanceDelay 0 reassigns them at once).
const (
	leaseDuration     = 3 * time.Second
	opTimeout         = time.Second
	replanInterval    = 3 * time.Second
	reconcileInterval = 2 * time.Second
	drainDeadline     = 2 * time.Second
	rebalanceDelay    = 0

	commitEvery = 500 * time.Millisecond // a crash replays at most this much per split
	pollMax     = 100 * time.Millisecond // longest park in PollEvents
)

// workerConfig returns the coordinator configuration of worker name.
func workerConfig(name string, logger *slog.Logger, reg prometheus.Registerer) coordination.Config {
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = name
	cfg.LeaseDuration = leaseDuration
	cfg.OpTimeout = opTimeout
	cfg.ReplanInterval = replanInterval
	cfg.ReconcileInterval = reconcileInterval
	cfg.DrainDeadline = drainDeadline
	cfg.RebalanceDelay = rebalanceDelay
	cfg.Logger = logger
	if reg != nil {
		cfg.Metrics = reg
	}
	return cfg
}

// Outcomes of a worker's run.
const (
	stateRunning int32 = iota
	stateCompleted
	stateStopped
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
	case stateStopped:
		return "stopped"
	case stateCrashed:
		return "crashed"
	default:
		return "failed"
	}
}

// worker is one member of the job: its own hollywood engine, NATS connection
// (a natsstore.Store), coordinator, source and driver, and the control loop
// that drives them. In a real deployment each worker is a process; here
// several run in one process and share nothing but the sink (the ledger).
type worker struct {
	index int    // ledger index
	name  string // instance id

	abort      func()       // the coordinator's Abort
	closeStore func() error // drops the NATS connection
	drv        *driver.Driver
	src        *source
	fleet      *fleet
	log        *slog.Logger

	stop  chan struct{} // closed once to stop gracefully (driver.WithStop)
	dead  chan struct{} // closed once by crash: lanes stop at once
	crash sync.Once

	state     atomic.Int32 // stateRunning etc.
	held      atomic.Int64 // open lanes
	completed atomic.Int64 // splits this worker committed complete
}

// newWorker builds worker name (index i) against the NATS servers of job. No
// I/O happens until run.
func newWorker(i int, name string, natsCfg natsstore.Config, sink *ledger, pace readPace, f *fleet,
	logger *slog.Logger, reg prometheus.Registerer) (*worker, error) {
	st, err := natsstore.New(natsCfg, leaseDuration)
	if err != nil {
		return nil, err
	}
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("worker %s: hollywood engine: %w", name, err), st.Close())
	}
	c, err := actors.Spawn(engine, st, workerConfig(name, logger, reg))
	if err != nil {
		return nil, errors.Join(err, st.Close())
	}
	return assemble(i, c.InstanceID(), c, c.Abort, st.Close, sink, pace, f, logger), nil
}

// assemble wires a worker around coordinator c: its source and its driver.
// abort crashes c; closeStore drops its store connection.
func assemble(i int, name string, c coordination.Coordinator, abort func(), closeStore func() error,
	sink *ledger, pace readPace, f *fleet, logger *slog.Logger) *worker {
	w := &worker{
		index:      i,
		name:       name,
		abort:      abort,
		closeStore: closeStore,
		fleet:      f,
		log:        logger,
		stop:       make(chan struct{}),
		dead:       make(chan struct{}),
	}
	w.src = newSource(i, sink, pace, w.dead)
	w.drv = driver.New(c, w.src, driver.WithStop(w.stop), driver.WithLogger(logger))
	return w
}

// crashNow simulates a crash: the lanes stop reading at once and the
// coordinator is aborted, writing nothing more. Nothing is committed or
// handed back: the worker's leases expire and peers take its splits over from
// their last committed watermarks. Safe to call from any goroutine.
func (w *worker) crashNow() {
	w.crash.Do(func() {
		close(w.dead)
		w.abort()
		w.drv.Waker().Wake()
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

// run is the embedder's control loop: start the driver, then poll it, commit
// acknowledged watermarks every commitEvery (and at once when a lane reaches
// end of input), and follow lanes as they come and go, until the job is over
// for this worker (Drained), ctx ends (graceful stop) or the worker crashes.
// It returns nil when the worker finished or stopped cleanly.
func (w *worker) run(ctx context.Context, p coordination.Planner) error {
	if err := w.drv.Start(p); err != nil {
		w.state.Store(stateFailed)
		return errors.Join(fmt.Errorf("worker %s: %w", w.name, err), w.drv.Shutdown(nil), w.closeStore())
	}
	nextCommit := time.Now().Add(commitEvery)
	for {
		if w.crashed() {
			return w.afterCrash()
		}
		if ctx.Err() != nil {
			return w.shutdown(stateStopped, nil)
		}
		ev, err := w.drv.PollEvents(min(pollMax, max(time.Millisecond, time.Until(nextCommit))))
		if w.crashed() {
			return w.afterCrash()
		}
		if err != nil {
			if coordination.KindOf(err) == coordination.Retryable {
				w.log.Warn("poll failed; will retry", "worker", w.name, "error", err)
				select { // do not spin on a persistent source error
				case <-time.After(pollMax):
				case <-w.dead:
				case <-ctx.Done():
				}
				continue
			}
			return w.shutdown(stateFailed, err)
		}
		switch ev := ev.(type) {
		case driver.LanesAdded:
			for _, l := range ev.Lanes {
				resume, _ := w.src.resumeOf(l.Split.ID)
				w.fleet.gained(w.name, l.Split.ID, resume)
			}
		case driver.LanesRevoked:
			for _, end := range w.src.settle(ev.Lanes) {
				w.fleet.lost(w.name, end)
			}
		case driver.LanesRetired:
			for _, end := range w.src.settle(ev.Lanes) {
				if end.acked == end.records.End {
					w.completed.Add(1)
				}
				w.fleet.retired(w.name, end)
			}
		case driver.CommitReady:
			if err := w.commit(w.src.watermarksOf(ev.Partitions)); err != nil {
				return w.shutdown(stateFailed, err)
			}
		case driver.Drained:
			return w.shutdown(stateCompleted, nil)
		case driver.Idle:
		}
		w.held.Store(int64(w.src.held()))
		if !time.Now().Before(nextCommit) {
			if err := w.commit(w.src.advanced()); err != nil {
				return w.shutdown(stateFailed, err)
			}
			nextCommit = time.Now().Add(commitEvery)
		}
	}
}

// commit hands watermarks to the driver. Retryable errors are logged and the
// run goes on (the next commit supersedes the lost one); anything else ends
// the run.
func (w *worker) commit(ws []driver.Watermark) error {
	if len(ws) == 0 || w.crashed() {
		return nil
	}
	err := w.drv.Commit(ws)
	if err != nil && coordination.KindOf(err) == coordination.Retryable {
		w.log.Warn("commit failed; the next commit supersedes it", "worker", w.name, "error", err)
		return nil
	}
	return err
}

// shutdown is the driver's stop sequence: close the stop channel, stop the
// lanes and collect their final watermarks, then Shutdown (final commit and
// Depart, which hands every held split back at once).
func (w *worker) shutdown(state int32, cause error) error {
	close(w.stop)
	final := w.src.stopAll()
	err := w.drv.Shutdown(final)
	w.src.wait()
	w.held.Store(0)
	if cause != nil || err != nil {
		state = stateFailed
	}
	w.state.Store(state)
	errs := errors.Join(cause, err, w.closeStore())
	if errs != nil {
		return fmt.Errorf("worker %s: %w", w.name, errs)
	}
	return nil
}

// afterCrash ends the run of a crashed worker: it waits for its lanes to exit
// and drops the NATS connection, as a dying process would.
func (w *worker) afterCrash() error {
	w.src.wait()
	w.held.Store(0)
	w.state.Store(stateCrashed)
	_ = w.closeStore() // a dead process's connection just goes away
	return nil
}
