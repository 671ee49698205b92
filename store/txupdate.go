package store

import "context"

// TxFunc is a caller's statements that run inside a store's transaction
// ([TxUpdater]). tx is the store's transaction handle: a pgx.Tx on
// package pgstore. A non-nil error rolls the transaction back.
type TxFunc func(ctx context.Context, tx any) error

// TxUpdater is the optional extension of a [Store] that runs a caller's
// statements in the same transaction as a compare-and-swap update: both
// commit, or neither does (docs/protocol.md, "Commits"). pgstore implements
// it; a store without transactions does not, and exactly-once commits
// (coordination.TxCommitter) are then refused.
type TxUpdater interface {
	Store
	// UpdateTx is Update with fn run in the update's transaction: fn first,
	// then the compare-and-swap, then the commit. A lost comparison rolls
	// fn's writes back and returns (0, false, nil); an error from fn rolls
	// everything back and is returned wrapped as Retryable (nothing
	// landed). A failed commit is Retryable: both may or may not have
	// landed, as for Update.
	UpdateTx(ctx context.Context, ks Keyspace, key string, value []byte, expected Revision, fn TxFunc) (Revision, bool, error)
}
