package splitwriter

import (
	"context"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// The split-writer actor's check of a split record the view saw deleted
// (docs/protocol.md, "Missing records"). No write of the protocol deletes a
// split record, so a deletion is Fatal on every worker, but only once a read
// of its own confirms it: a watch snapshot or a reconcile listing that
// lacks a key is taken as its delete, and one that misses a live key must
// not fail the worker. A leader seeding again a split whose record is gone
// checks it too (checkNotDeleted, seed.go).

// missingTries bounds the confirmation reads of one deletion.
const missingTries = 3

// recordChecked is the confirmation read of a split record the view saw
// deleted.
type recordChecked struct {
	id    coordination.SplitID
	found bool
	entry store.Entry
}

// confirmDeleted reads split id's record after the view saw it deleted and
// reports what it found; a read that fails is retried, missingTries times.
func (sw *splitWriterActor) confirmDeleted(id coordination.SplitID) {
	v, pid := sw.v, sw.v.PIDs.SplitWriter
	v.Go(func(ctx context.Context) {
		key := protocol.SplitKey(id)
		for try := range missingTries {
			oc, cancel := v.OpCtx(ctx)
			e, found, err := v.Store.Get(oc, store.Durable, key)
			cancel()
			if err == nil {
				v.Send(pid, recordChecked{id: id, found: found, entry: e})
				return
			}
			if v.FatalIf(err) || try == missingTries-1 || !sleepCtx(ctx, v.Config.OpTimeout) {
				v.Log.Warn("could not confirm a split record's deletion", "key", key, "err", err)
				return
			}
		}
	})
}

// checked applies a confirmation read: gone is Fatal; present is folded
// back into the view (the deletion the view saw was not the store's).
func (sw *splitWriterActor) checked(m recordChecked) {
	key := protocol.SplitKey(m.id)
	if !m.found {
		sw.v.FailNow(worker.SplitRecordDeleted(key))
		return
	}
	rec, err := protocol.DecodeSplit(key, m.entry.Value, sw.fp)
	if err != nil {
		sw.v.FatalIf(err)
		return
	}
	sw.log.Warn("a split record the view saw deleted is in the store; keeping it", "key", key)
	sw.fold(m.id, &rec, uint64(m.entry.Revision))
}

// sleepCtx waits d of real time; false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
