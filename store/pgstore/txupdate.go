package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

var _ store.TxUpdater = (*Store)(nil)

// UpdateTx runs fn and the compare-and-swap update of key in one
// transaction on the job's database (store.TxUpdater): BEGIN, fn's
// statements, the comparison, COMMIT, and no other round trip (each
// exactly-once batch pays for them; docs/sqlscan.md, "What it costs"). The
// comparison takes the job's advisory lock (update_entry), so the lock is
// held only from the comparison to the commit; a comparison lost rolls
// fn's writes back (0, false, nil). fn gets the transaction as a pgx.Tx;
// its statements run under the pool's statement_timeout (LeaseTTL/2). An
// error of fn rolls back; then key's revision is read, and one that
// differs from expected returns (0, false, nil), as a lost comparison
// does: the usual cause is an earlier attempt that landed unseen, whose
// rows a sink's unique constraint refuses when fn runs again. Otherwise
// fn's error is returned as Retryable wrapping it. A failed commit is
// Retryable and may have landed.
func (s *Store) UpdateTx(ctx context.Context, ks store.Keyspace, key string, value []byte, expected store.Revision, fn store.TxFunc) (store.Revision, bool, error) {
	if err := checkKey(key); err != nil {
		return 0, false, err
	}
	if err := checkValue(key, value); err != nil {
		return 0, false, err
	}
	pool, err := s.open(ctx)
	if err != nil {
		return 0, false, err
	}
	what := opName("UpdateTx", ks, key)
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, false, s.fail(ctx, what, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // a no-op after Commit
	if err := fn(ctx, tx); err != nil {
		if ctx.Err() != nil {
			return 0, false, s.fail(ctx, what, err)
		}
		_ = tx.Rollback(context.WithoutCancel(ctx))
		if s.movedFrom(ctx, pool, ks, key, expected) {
			return 0, false, nil
		}
		return 0, false, &coordination.Error{Kind: coordination.Retryable, Reason: "pgstore: " + what + ": the caller's statements failed: " + redactedReason(err, s.cfg), Err: err}
	}
	var rev int64
	if err := tx.QueryRow(ctx, s.q.update, int16(ks), key, bytesOf(value), int64(expected), s.ttlFor(ks)).Scan(&rev); err != nil {
		return 0, false, s.fail(ctx, what, err)
	}
	if rev == 0 {
		return 0, false, nil // the deferred rollback discards fn's writes
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, false, s.fail(ctx, what, err)
	}
	return store.Revision(rev), true, nil
}

// movedFrom reports whether key is known to be at a revision other than
// expected (or gone): a comparison at expected would lose. A failed read
// reports false, so that the caller returns the error it has.
func (s *Store) movedFrom(ctx context.Context, pool *pgxpool.Pool, ks store.Keyspace, key string, expected store.Revision) bool {
	var value []byte
	var size *int32
	var rev int64
	switch err := pool.QueryRow(ctx, s.q.get, int16(ks), key).Scan(&value, &size, &rev); {
	case errors.Is(err, pgx.ErrNoRows):
		return true
	case err != nil:
		return false
	}
	return rev != int64(expected)
}
