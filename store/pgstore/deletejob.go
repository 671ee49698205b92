package pgstore

import (
	"context"
)

// DeleteJob drops the job's schema and with it every record of the job,
// its change log included (DROP SCHEMA ... CASCADE; the role must own the
// schema). Other handles' later operations on the job fail Fatal naming
// the missing schema. It does not close the store. A job that does not
// exist is not an error.
func (s *Store) DeleteJob(ctx context.Context) error {
	pool, err := s.connect(ctx)
	if err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+s.sc.ident+" CASCADE"); err != nil {
		return s.fail(ctx, "dropping schema "+s.sc.name, err)
	}
	s.mu.Lock()
	s.ready = false
	s.mu.Unlock()
	return nil
}
