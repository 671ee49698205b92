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
func (v *env) committed(id coordination.SplitID, epoch uint64, d casResult[protocol.ProgressRecord]) error {
	switch d.outcome {
	case casLanded:
		v.out.advance(id, epoch, d.rec, d.rev)
		if !d.adopted {
			v.route(roleHandle, messages.CommitLanded{Split: id, Epoch: epoch})
		}
		if d.rec.Completed {
			v.out.ended(id, epoch)
			v.route(roleHandle, messages.EndTenancy{Split: id, Epoch: epoch, Reason: messages.EndCompleted})
		}
		return nil
	case casFenced:
		v.out.ended(id, epoch)
		v.route(roleHandle, messages.EndTenancy{Split: id, Epoch: epoch, Reason: messages.EndFenced})
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
// adopt-and-retry-once rule (cas.go) for a conflict caused by this
// tenancy's own earlier write. A regressing watermark or an oversized
// record is Fatal before any write.
func casProgress(ctx context.Context, v *env, id coordination.SplitID, cell progressCell, p coordination.SplitProgress) casResult[protocol.ProgressRecord] {
	now := v.nowMs()
	return casAdopt(ctx, v, casWrite[protocol.ProgressRecord]{
		split: id,
		key:   protocol.ProgressKey(id),
		doing: fmt.Sprintf("committing split %s", id),
		build: func(base protocol.ProgressRecord) (protocol.ProgressRecord, []byte, *casResult[protocol.ProgressRecord]) {
			if err := checkWatermark(id, base, p); err != nil {
				return base, nil, &casResult[protocol.ProgressRecord]{outcome: casFatal, err: err}
			}
			want := base.Commit(p, now)
			b := protocol.EncodeProgress(want)
			if err := protocol.CheckProgressSize(id, len(b), v.cap); err != nil {
				return base, nil, &casResult[protocol.ProgressRecord]{outcome: casFatal, err: err}
			}
			return want, b, nil
		},
		classify: func(want protocol.ProgressRecord, found bool, got protocol.ProgressRecord) conflictClass {
			return classifyProgressConflict(v.id, cell.epoch, want, found, got)
		},
		decode: protocol.DecodeProgress,
		recreate: func(ctx context.Context, b []byte) (store.Entry, bool, bool, error) {
			return recreateProgress(ctx, v, id, cell.epoch, b)
		},
		rollback: true,
		rebased: func(got protocol.ProgressRecord, rev uint64) {
			v.out.advance(id, cell.epoch, got, rev)
		},
	}, cell.prog, cell.rev)
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
