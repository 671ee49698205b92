package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

var _ store.TxUpdater = (*Store)(nil)

// UpdateTx runs fn and the compare-and-swap update of key in one
// transaction on the job's database (store.TxUpdater). First a read of
// key's revision: one that differs from expected returns (0, false, nil)
// before fn runs (an earlier attempt that landed unseen is the usual
// cause, and a sink's unique constraint would refuse fn's rows). Then fn's
// statements, then the comparison, which takes the job's advisory lock
// (update_entry), so the lock is held only from the comparison to the
// commit; a comparison lost meanwhile rolls fn's writes back (0, false,
// nil). fn gets the transaction as a pgx.Tx; its statements run under the
// pool's statement_timeout (LeaseTTL/2). An error of fn rolls back and is
// returned as Retryable wrapping it; a failed commit is Retryable and may
// have landed.
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
	// A comparison already lost (the usual cause: an earlier attempt that
	// landed unseen) runs none of fn's statements, which a sink's unique
	// constraint would refuse; the locked comparison below decides.
	var value0 []byte
	var size0 *int32
	var rev0 int64
	switch err := tx.QueryRow(ctx, s.q.get, int16(ks), key).Scan(&value0, &size0, &rev0); {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, s.fail(ctx, what, err)
	}
	if err := s.checkRead(ks, key, size0, rev0); err != nil {
		return 0, false, err
	}
	if rev0 != int64(expected) {
		return 0, false, nil
	}
	if err := fn(ctx, tx); err != nil {
		if ctx.Err() != nil {
			return 0, false, s.fail(ctx, what, err)
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
