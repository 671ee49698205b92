package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// setupRun is one run of the job's schema setup (checks, and creation
// unless Config.ExistingOnly), shared by every operation that waits for it.
// It runs on a goroutine of the store's, bounded by a connection attempt
// and opBound rather than by the operation that started it: on a loaded server the first catalog
// statements of a new backend can take longer than a short OpTimeout, and
// a setup cancelled with its operation dropped its connection, so the next
// attempt met a new backend and was cancelled again (a worker gave up
// after eight store probes so, under load). An operation still waits no
// longer than its own context.
type setupRun struct {
	done chan struct{} // closed once err is set
	err  error
}

// open returns the pool once the job's schema is ready; the first call
// starts the setup (and the sweeper once it succeeded, unless
// ExistingOnly), and every call waits for the run in progress within its
// own context. A failed run is forgotten: the next call starts another.
func (s *Store) open(ctx context.Context) (*pgxpool.Pool, error) {
	pool, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return nil, errClosed()
	case s.ready:
		s.mu.Unlock()
		return pool, nil
	}
	run := s.setting
	if run == nil {
		run = &setupRun{done: make(chan struct{})}
		s.setting = run
		s.wg.Go(func() { s.runSetup(run, pool) }) // under mu, not closed: Close waits for it
	}
	s.mu.Unlock()
	select {
	case <-run.done:
		if run.err != nil {
			return nil, run.err
		}
		return pool, nil
	case <-ctx.Done():
		return nil, s.ctxErr("waiting for the schema setup", ctx.Err())
	}
}

// runSetup runs the setup of run on pool, bounded by Close and by a
// connection attempt (the pool's connect timeout) plus opBound, and
// publishes its outcome.
func (s *Store) runSetup(run *setupRun, pool *pgxpool.Pool) {
	ctx, cancel := context.WithTimeout(s.life, pool.Config().ConnConfig.ConnectTimeout+s.opBound())
	defer cancel()
	err := s.setup(ctx, pool)
	if err == nil {
		s.checkDurability(ctx, pool)
	}
	s.mu.Lock()
	switch {
	case s.closed:
		err = errClosed()
	case err == nil:
		s.ready = true
		if !s.cfg.ExistingOnly && !s.sweeping {
			s.sweeping = true
			s.goBusy(s.sweep)
		}
	}
	s.setting = nil
	run.err = err
	s.mu.Unlock()
	close(run.done)
}
