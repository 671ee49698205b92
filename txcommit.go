package coordination

import "context"

// TxFunc is a caller's statements that an exactly-once commit runs in the
// store's transaction ([TxCommitter]). tx is the store's transaction
// handle: a pgx.Tx (github.com/jackc/pgx/v5) on package pgstore. A non-nil
// error rolls the whole commit back.
type TxFunc = func(ctx context.Context, tx any) error

// TxCommitter is the optional extension of [Coordinator] that commits a
// held split's progress together with the caller's own writes, in one
// transaction of the store (docs/protocol.md, "Exactly-once commits"):
// the sink's rows and the progress that covers them land together or not
// at all, which turns at-least-once delivery into an exactly-once effect
// (Kafka's sendOffsetsToTransaction). The coordinator of package actors
// implements it on a store that runs transactions (pgstore); the caller
// writes no fencing logic.
type TxCommitter interface {
	Coordinator
	// CommitTx durably commits progress of the tenancy of epoch of a held
	// split, with fn run in the same transaction: nil means both are
	// durable; Fenced means nothing was written (fn's writes rolled back)
	// and the split is gone; Retryable means both may or may not have
	// landed: call CommitTx again with the same progress and the same
	// writes until it returns nil or Fenced, and the read-back decides it
	// (fn runs again only when the earlier attempt did not land). A Fatal
	// error is a usage error (a store without transactions, a regressing
	// watermark). Once a tenancy committed with CommitTx, its ordinary
	// non-completing commits write nothing: the progress is the
	// exactly-once commits'.
	CommitTx(split SplitID, epoch LeaseEpoch, progress SplitProgress, fn TxFunc) error
}
