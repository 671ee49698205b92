package worker

import (
	"context"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// update runs one compare-and-swap of a fenced write: a plain Update, or,
// with a payload, the store's UpdateTx, whose transaction holds both
// (docs/protocol.md, "Commits"). A store without transactions refuses a
// payload as Fatal before any write.
func update(ctx context.Context, v *Env, key string, b []byte, rev store.Revision, payload store.TxFunc) (store.Revision, bool, error) {
	if payload == nil {
		return v.Store.Update(ctx, store.Durable, key, b, rev)
	}
	tu, ok := v.Store.(store.TxUpdater)
	if !ok {
		return 0, false, noTx(v.Store)
	}
	return tu.UpdateTx(ctx, store.Durable, key, b, rev, payload)
}

// UpdateTx is the guarded store's store.TxUpdater: refused once the worker
// halted, and Fatal when the store it wraps runs no transactions.
func (g *GuardedStore) UpdateTx(ctx context.Context, ks store.Keyspace, key string, value []byte, expected store.Revision, fn store.TxFunc) (store.Revision, bool, error) {
	if g.Halted.Load() {
		return 0, false, errHalted
	}
	tu, ok := g.Store.(store.TxUpdater)
	if !ok {
		return 0, false, noTx(g.Store)
	}
	defer g.timed("put")()
	return tu.UpdateTx(ctx, ks, key, value, expected, fn)
}

// noTx is the Fatal error of an exactly-once commit on a store that runs no
// transactions.
func noTx(st store.Store) error {
	return coordination.Errorf(coordination.Fatal, "exactly-once commits need a store that runs transactions (pgstore); this store (%T) does not", st)
}
