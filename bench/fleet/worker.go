package main

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/store"
)

// commitPeriod is how often a committing worker commits every held split.
const commitPeriod = 500 * time.Millisecond

// workerSpec says how to build one worker.
type workerSpec struct {
	id          string
	maxInFlight int
	reconcile   time.Duration
}

// worker is one member of a fleet: its own store connection (wrapped in the
// counting decorator), engine and coordinator, driven by one goroutine (the
// loop) that polls events, keeps the held set, hands revoked splits back at
// once and, when asked, commits every held split every commitPeriod. Every
// call on the coordinator happens on the loop.
type worker struct {
	id    string
	raw   store.Store
	st    *countingStore
	c     *actors.Coordinator
	waker *coordination.Waker

	held        map[coordination.SplitID]int64 // split → last watermark; loop only
	heldN       atomic.Int64
	gained      atomic.Int64
	ended       atomic.Int64 // held splits that left by Lost or RevokeRequested
	changed     atomic.Int64 // unix nanoseconds of the last Gained or Lost
	firstGained atomic.Int64 // unix nanoseconds of the first Gained; 0 before
	startedAt   time.Time    // when Start returned
	commits     atomic.Int64 // commits that returned nil

	errMu sync.Mutex
	err   error // the first Fatal the loop met; it then stops

	calls  chan func()   // closures run on the loop; unbuffered
	commit chan bool     // switches the commit ticker; unbuffered
	quit   chan struct{} // closed once by stop
	done   chan struct{} // closed when the loop returns
	once   sync.Once
}

// startWorker builds a worker for job and starts it with p.
func startWorker(e *env, job string, ws workerSpec, p coordination.Planner) (*worker, error) {
	raw, err := e.store(job)
	if err != nil {
		return nil, err
	}
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = ws.id
	cfg.LeaseDuration = e.lease
	cfg.StartupGrace = e.grace
	cfg.OpTimeout = min(cfg.OpTimeout, e.lease/2)
	cfg.ReplanInterval = max(cfg.ReplanInterval, e.lease)
	cfg.ReconcileInterval = max(ws.reconcile, 2*cfg.OpTimeout)
	cfg.MaxInFlight = ws.maxInFlight
	cfg.Logger = slog.New(slog.DiscardHandler) // nil would be slog.Default(): the figures' lines only
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		return nil, errors.Join(err, raw.Close())
	}
	w := &worker{
		id:     ws.id,
		raw:    raw,
		st:     newCounting(raw),
		waker:  coordination.NewWaker(),
		held:   make(map[coordination.SplitID]int64),
		calls:  make(chan func()),
		commit: make(chan bool),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	if w.c, err = actors.Spawn(engine, w.st, cfg); err != nil {
		return nil, errors.Join(err, raw.Close())
	}
	w.c.SetWaker(w.waker)
	if err := w.c.Start(p); err != nil {
		w.c.Abort()
		return nil, errors.Join(err, raw.Close())
	}
	w.startedAt = time.Now()
	go w.loop()
	return w, nil
}

// loop is the worker's only goroutine calling the coordinator.
func (w *worker) loop() {
	defer close(w.done)
	var tick <-chan time.Time
	var ticker *time.Ticker
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	for w.failed() == nil {
		select {
		case <-w.quit:
			return
		case <-w.waker.C():
		case f := <-w.calls:
			f()
		case on := <-w.commit:
			if ticker != nil {
				ticker.Stop()
				ticker, tick = nil, nil
			}
			if on {
				ticker = time.NewTicker(commitPeriod)
				tick = ticker.C
			}
		case <-tick:
			w.commitAll()
		}
		w.poll()
	}
}

// poll applies every pending event to the held set.
func (w *worker) poll() {
	evs, err := w.c.Poll()
	if err != nil {
		w.fail(err)
		return
	}
	for _, ev := range evs {
		switch ev := ev.(type) {
		case coordination.Gained:
			var mark int64
			if ev.Progress != nil {
				mark = ev.Progress.Watermark
			}
			w.held[ev.Split.ID] = mark
			w.gained.Add(1)
			now := time.Now().UnixNano()
			w.changed.Store(now)
			w.firstGained.CompareAndSwap(0, now)
		case coordination.Lost:
			if _, ok := w.held[ev.Split]; ok {
				delete(w.held, ev.Split)
				w.ended.Add(1)
			}
			w.changed.Store(time.Now().UnixNano())
		case coordination.RevokeRequested:
			if _, ok := w.held[ev.Split]; ok {
				delete(w.held, ev.Split)
				w.ended.Add(1)
				w.changed.Store(time.Now().UnixNano())
				if err := w.c.ReleaseDrained(ev.Split); coordination.KindOf(err) == coordination.Fatal {
					w.fail(err)
				}
			}
		}
	}
	w.heldN.Store(int64(len(w.held)))
}

// commitAll commits the next watermark of every held split.
func (w *worker) commitAll() {
	for id, mark := range w.held {
		mark++
		err := w.c.Commit(id, coordination.SplitProgress{Watermark: mark, State: []byte("bench")})
		switch coordination.KindOf(err) {
		case 0:
			w.held[id] = mark
			w.commits.Add(1)
		case coordination.Fatal:
			w.fail(err)
			return
		}
		// Fenced (a Lost follows) and Retryable (the next round retries)
		// are part of a busy fleet.
	}
}

// do runs f on the loop and waits for it; false if the loop has ended.
func (w *worker) do(f func()) bool {
	ran := make(chan struct{})
	select {
	case w.calls <- func() { f(); close(ran) }:
		<-ran
		return true
	case <-w.done:
		return false
	}
}

// setCommitting starts or stops the commit ticker.
func (w *worker) setCommitting(on bool) {
	select {
	case w.commit <- on:
	case <-w.done:
	}
}

// depart leaves the job for good, handing back every held split, on the
// loop; nil if the loop has ended already.
func (w *worker) depart() error {
	var err error
	w.do(func() {
		ids := make([]coordination.SplitID, 0, len(w.held))
		for id := range w.held {
			ids = append(ids, id)
		}
		err = w.c.Depart(ids...)
		clear(w.held)
		w.heldN.Store(0)
	})
	return err
}

// fail records the first Fatal error.
func (w *worker) fail(err error) {
	w.errMu.Lock()
	if w.err == nil {
		w.err = fmt.Errorf("worker %s: %w", w.id, err)
	}
	w.errMu.Unlock()
}

// failed returns the first Fatal error, or nil.
func (w *worker) failed() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

// stop ends the loop, aborts the coordinator (a crash: nothing more is
// written, which keeps teardown fast at any size) and closes the store.
// Safe to call more than once.
func (w *worker) stop() {
	w.once.Do(func() {
		close(w.quit)
		<-w.done
		w.c.Abort()
		_ = w.raw.Close()
	})
}
