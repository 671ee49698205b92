package pgstore

import (
	"context"
	"time"
)

// sweepBatch bounds the expired keys one sweep pass removes, and
// pruneBatch the change-log rows one prune pass removes.
const (
	sweepBatch = 1000
	pruneBatch = 10000
)

// pruneEvery is how many sweep passes go by between two prunes of the
// change log.
const pruneEvery = 10

// sweepInterval is the cadence of the sweeper: min(LeaseTTL/4, 1s). An
// expired key is absent to every read at once; its Delete reaches watchers
// within about one interval.
func (s *Store) sweepInterval() time.Duration { return min(s.leaseTTL/4, time.Second) }

// sweep runs until Close on every store that may create the schema: each
// pass turns the keys that expired into Delete changes and removes them
// (sweep_expired, which takes the job's write lock only when something
// expired), and every pruneEvery passes it removes change-log rows older
// than the retention. Any number of handles may sweep at once: the lock
// serializes them, and a key is removed once. A full batch is followed by
// another pass at once. A role without write privileges stops sweeping
// with one log line. Close stops it between passes (done), or cancels the
// pass in flight after endGrace.
func (s *Store) sweep() {
	tick := time.NewTicker(s.sweepInterval())
	defer tick.Stop()
	for pass := 1; ; pass++ {
		select {
		case <-s.done:
			return
		case <-tick.C:
		}
		for {
			n, err := s.sweepOnce(s.q.sweep, sweepBatch)
			if err != nil {
				if s.sweepFailed("expired keys", err) {
					return
				}
				break
			}
			if n < sweepBatch {
				break
			}
		}
		if pass%pruneEvery != 0 {
			continue
		}
		if _, err := s.sweepOnce(s.q.prune, s.cfg.retention().Microseconds(), pruneBatch); err != nil && s.sweepFailed("the change log", err) {
			return
		}
	}
}

// sweepOnce runs one sweep or prune statement, bounded by opBound.
func (s *Store) sweepOnce(q string, args ...any) (int, error) {
	ctx, cancel := context.WithTimeout(s.life, s.opBound())
	defer cancel()
	var n int
	err := s.pool.QueryRow(ctx, q, args...).Scan(&n)
	return n, err
}

// sweepFailed logs a failed pass and reports whether sweeping should stop
// for good (the role may not write, or the store is closing).
func (s *Store) sweepFailed(what string, err error) bool {
	if s.life.Err() != nil {
		return true
	}
	if isPrivilegeErr(err) {
		s.log.Info("sweeper stopped: the role may not write the job's schema", "job", s.cfg.Job, "err", redactedReason(err, s.cfg))
		return true
	}
	s.log.Debug("sweep failed", "job", s.cfg.Job, "reason", what, "err", redactedReason(err, s.cfg))
	return false
}
