package actors

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/messages"
	"github.com/spate-go/coordination/store"
)

// The commit path runs on the caller's goroutine (docs/architecture.md,
// "The commit path"): from its Gained on, a tenancy's progress record has
// one writer, the handle, so a commit is one CAS with no actor hop. The
// actors learn the outcome by message: a landed commit refreshes a
// revocation's last progress, a completed one ends the tenancy, a fenced
// one drops it.

// Commit durably writes a held split's progress through a fenced CAS on
// its progress record (docs/protocol.md, "Commits"): nil is durable, Fenced
// means nothing was written and the split is gone, Retryable means the
// write may or may not have landed, Fatal for a regressing watermark or an
// oversized record. It blocks for at most OpTimeout, and returns shortly
// after the stop channel closes.
func (c *Coordinator) Commit(split coordination.SplitID, progress coordination.SplitProgress) error {
	if err := c.gate(); err != nil {
		return err
	}
	cell, ok := c.v.out.heldCell(split)
	if !ok {
		return notHeld(split)
	}
	ctx, stopped := c.stopContext()
	ctx, cancel := c.v.opCtx(ctx)
	defer cancel()
	progress.State = cloneBytes(progress.State)
	d := casProgress(ctx, c.v, split, cell, progress)
	if d.outcome != casLanded && stopped() {
		return stoppedBeforeDone("commit")
	}
	return c.v.committed(split, cell.epoch, d)
}

// CommitFinal writes the last commits of a stop: one result per entry, in
// order, within OpTimeout + 100ms; it ignores the stop. Entries for one
// split apply in entry order; different splits are written concurrently.
func (c *Coordinator) CommitFinal(commits []coordination.Commit) []error {
	errs := make([]error, len(commits))
	if err := c.gate(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	bySplit := map[coordination.SplitID][]int{}
	var order []coordination.SplitID
	for i, cm := range commits {
		if _, seen := bySplit[cm.Split]; !seen {
			order = append(order, cm.Split)
		}
		bySplit[cm.Split] = append(bySplit[cm.Split], i)
	}
	ctx, cancel := c.v.opCtx(c.v.ctx)
	defer cancel()
	settled := make([]bool, len(commits))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range order {
		wg.Go(func() { // bounded by ctx (OpTimeout)
			for _, i := range bySplit[id] {
				err := c.finalEntry(ctx, id, commits[i].Progress)
				mu.Lock()
				errs[i], settled[i] = err, true
				mu.Unlock()
			}
		})
	}
	done := make(chan struct{})                  // closed once every entry settled
	c.v.wg.Go(func() { wg.Wait(); close(done) }) // owned by the worker: shutdown waits for it
	t := time.NewTimer(c.v.cfg.OpTimeout + 50*time.Millisecond)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	mu.Lock()
	defer mu.Unlock()
	out := make([]error, len(commits))
	for i, cm := range commits {
		out[i] = errs[i]
		if !settled[i] {
			out[i] = finalUnconfirmed(cm.Split, c.v.cfg.OpTimeout)
		}
	}
	return out
}

// finalEntry writes one CommitFinal entry.
func (c *Coordinator) finalEntry(ctx context.Context, id coordination.SplitID, p coordination.SplitProgress) error {
	cell, ok := c.v.out.heldCell(id)
	if !ok {
		return notHeld(id)
	}
	p.State = cloneBytes(p.State)
	return c.v.committed(id, cell.epoch, casProgress(ctx, c.v, id, cell, p))
}

// committed records a commit's outcome and tells the actors: the error is
// the caller's result.
func (v *env) committed(id coordination.SplitID, epoch uint64, d opDone) error {
	switch d.outcome {
	case casLanded:
		v.out.advance(id, epoch, d.prog, d.progRev)
		if !d.adopted {
			v.publish(roleHandle, messages.CommitLanded{Split: id, Epoch: epoch})
		}
		if d.prog.Completed {
			v.out.ended(id, epoch)
			v.publish(roleHandle, messages.EndTenancy{Split: id, Epoch: epoch, Reason: messages.EndCompleted})
		}
		return nil
	case casFenced:
		v.out.ended(id, epoch)
		v.publish(roleHandle, messages.EndTenancy{Split: id, Epoch: epoch, Reason: messages.EndFenced})
	case casFatal:
		v.failNow(d.err)
	default:
		v.fatalIf(d.err)
	}
	return d.err
}

// stopContext returns a context that ends stopGrace after the stop channel
// closes (never, without one), and a func reporting whether it did.
func (c *Coordinator) stopContext() (context.Context, func() bool) {
	c.mu.Lock()
	ctx := c.stopCtx
	c.mu.Unlock()
	if ctx == nil {
		return c.v.ctx, func() bool { return false }
	}
	return ctx, func() bool { return ctx.Err() != nil && c.v.ctx.Err() == nil }
}

// casProgress runs a commit of progress p on the tenancy whose progress
// record cell holds (docs/protocol.md, "Commits"), with the
// adopt-and-retry-once rule for a conflict caused by this tenancy's own
// earlier write.
func casProgress(ctx context.Context, v *env, id coordination.SplitID, cell progressCell, p coordination.SplitProgress) opDone {
	key := protocol.ProgressKey(id)
	doing := fmt.Sprintf("committing split %s", id)
	prog, rev := cell.prog, cell.rev
	now := v.nowMs()
	for try := 0; ; try++ {
		if err := checkWatermark(id, prog, p); err != nil {
			return opDone{outcome: casFatal, err: err}
		}
		want := prog.Commit(p, now)
		b := protocol.EncodeProgress(want)
		if err := protocol.CheckProgressSize(id, len(b), v.cap); err != nil {
			return opDone{outcome: casFatal, err: err}
		}
		start := time.Now()
		r, ok, err := v.st.Update(ctx, store.Durable, key, b, store.Revision(rev))
		v.met.write(writeLabel(ok, err), time.Since(start))
		switch {
		case err != nil:
			return opDone{outcome: casUnconfirmed, err: storeErr(doing, err)}
		case ok:
			return opDone{outcome: casLanded, prog: want, progRev: uint64(r)}
		}
		e, found, err := v.st.Get(ctx, store.Durable, key)
		if err == nil && !found {
			var recreated bool
			if e, found, recreated, err = recreateProgress(ctx, v, id, cell.epoch, b); recreated {
				return opDone{outcome: casLanded, prog: want, progRev: uint64(e.Revision)}
			}
		}
		if err != nil {
			return opDone{outcome: casUnconfirmed, err: storeErr(doing, err)}
		}
		if found && uint64(e.Revision) < rev {
			// This tenancy wrote (or adopted) rev: a lower one means the
			// store lost it (docs/protocol.md, "Store rollback").
			return opDone{outcome: casFatal, err: storeRolledBack(store.Durable, key, uint64(e.Revision), rev)}
		}
		var got protocol.ProgressRecord
		if found {
			if got, err = protocol.DecodeProgress(key, e.Value, v.fp.Load()); err != nil {
				return opDone{outcome: casFatal, err: err}
			}
		}
		switch classifyProgressConflict(v.id, cell.epoch, want, found, got) {
		case conflictLanded:
			return opDone{outcome: casLanded, prog: got, progRev: uint64(e.Revision), adopted: true}
		case conflictFenced:
			return opDone{outcome: casFenced, err: fencedErr(id)}
		}
		prog, rev = got, uint64(e.Revision)
		if try == 1 {
			v.out.advance(id, cell.epoch, prog, rev)
			return opDone{outcome: casUnconfirmed, err: keptMoving(doing)}
		}
	}
}

// recreateProgress heals a progress record deleted outside the library
// under a live tenancy (docs/protocol.md, "Missing records"): no write of
// the protocol deletes one, so the tenancy recreates it with the commit it
// meant to write (b), which carries everything it committed before: nothing
// regresses. A lost create means a claimant's fence recreated it first: the
// record is read again (e, found) for the usual conflict rules.
func recreateProgress(ctx context.Context, v *env, id coordination.SplitID, epoch uint64, b []byte) (e store.Entry, found, recreated bool, err error) {
	key := protocol.ProgressKey(id)
	r, ok, err := v.st.Create(ctx, store.Durable, key, b)
	switch {
	case err != nil:
		return store.Entry{}, false, false, err
	case ok:
		v.log.Warn("progress record missing (deleted outside the library); recreated from this tenancy's commit", "split", id, "key", key, "epoch", epoch)
		return store.Entry{Key: key, Value: b, Revision: r}, true, true, nil
	}
	e, found, err = v.st.Get(ctx, store.Durable, key)
	return e, found, false, err
}
