package worker

import (
	"context"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// GuardedStore refuses every write once the worker halted (its Latch
// fired: failed or aborted), so no actor can write after a Fatal or an
// Abort, and times every call for store_op_duration_seconds.
type GuardedStore struct {
	store.Store
	Latch   Latch // the worker's (Env.Latch), checked before each write
	Metrics *Metrics
}

func (g *GuardedStore) timed(op string) func() {
	start := time.Now()
	return func() { g.Metrics.storeOp(op, time.Since(start)) }
}

func (g *GuardedStore) Create(ctx context.Context, ks store.Keyspace, key string, value []byte) (store.Revision, bool, error) {
	if g.Latch.Halted() {
		return 0, false, errHalted
	}
	defer g.timed("put")()
	return g.Store.Create(ctx, ks, key, value)
}

func (g *GuardedStore) Update(ctx context.Context, ks store.Keyspace, key string, value []byte, expected store.Revision) (store.Revision, bool, error) {
	if g.Latch.Halted() {
		return 0, false, errHalted
	}
	defer g.timed("put")()
	return g.Store.Update(ctx, ks, key, value, expected)
}

func (g *GuardedStore) Delete(ctx context.Context, ks store.Keyspace, key string, expected store.Revision) (bool, error) {
	if g.Latch.Halted() {
		return false, errHalted
	}
	defer g.timed("delete")()
	return g.Store.Delete(ctx, ks, key, expected)
}

func (g *GuardedStore) Get(ctx context.Context, ks store.Keyspace, key string) (store.Entry, bool, error) {
	defer g.timed("get")()
	return g.Store.Get(ctx, ks, key)
}

func (g *GuardedStore) List(ctx context.Context, ks store.Keyspace, prefix string) ([]store.Entry, error) {
	defer g.timed("list")()
	return g.Store.List(ctx, ks, prefix)
}

func (g *GuardedStore) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	defer g.timed("watch")()
	return g.Store.Watch(ctx, ks, prefix)
}

// UpdateTx is the guarded store's store.TxUpdater: refused once the worker
// halted, and Fatal when the store it wraps runs no transactions.
func (g *GuardedStore) UpdateTx(ctx context.Context, ks store.Keyspace, key string, value []byte, expected store.Revision, fn store.TxFunc) (store.Revision, bool, error) {
	if g.Latch.Halted() {
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
