package actors

import (
	"context"
	"sync"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/commitwriter"
	"github.com/spate-go/coordination/actors/internal/worker"
)

// The handle's commits are written by the commit writer
// (actors/commitwriter; docs/architecture.md, "The commit path"): the
// handle asks it (Writers.Ask) a CommitRequest for the tenancy whose Gained
// Poll last handed out and waits for the CommitResult, taking the shard's
// turn on its own goroutine when the shard is idle.

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
	ctx, stopped := c.stopContext()
	ctx, cancel := c.v.OpCtx(ctx)
	defer cancel()
	res := c.commit(ctx, split, progress)
	if !res.Landed && stopped() {
		return worker.StoppedBeforeDone("commit")
	}
	return res.Err
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
	ctx, cancel := c.v.OpCtx(c.v.Ctx)
	defer cancel()
	settled := make([]bool, len(commits))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range order {
		wg.Go(func() { // bounded by ctx (OpTimeout)
			for _, i := range bySplit[id] {
				err := c.commit(ctx, id, commits[i].Progress).Err
				mu.Lock()
				errs[i], settled[i] = err, true
				mu.Unlock()
			}
		})
	}
	done := make(chan struct{})                  // closed once every entry settled
	c.v.WG.Go(func() { wg.Wait(); close(done) }) // owned by the worker: shutdown waits for it
	t := time.NewTimer(c.v.Config.OpTimeout + 50*time.Millisecond)
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
			out[i] = worker.FinalUnconfirmed(cm.Split, c.v.Config.OpTimeout)
		}
	}
	return out
}

// commit asks the commit writer for one commit of split on the tenancy
// whose Gained Poll last handed out.
func (c *Coordinator) commit(ctx context.Context, split coordination.SplitID, progress coordination.SplitProgress) commitwriter.CommitResult {
	epoch := c.out.PolledEpoch(split)
	if epoch == 0 {
		return commitwriter.CommitResult{Err: worker.NotHeld(split)}
	}
	progress.State = cloneBytes(progress.State)
	return c.commits.Ask(commitwriter.CommitRequest{Ctx: ctx, Split: split, Epoch: epoch, Progress: progress})
}

// stopContext returns a context that ends stopGrace after the stop channel
// closes (never, without one), and a func reporting whether it did.
func (c *Coordinator) stopContext() (context.Context, func() bool) {
	c.mu.Lock()
	ctx := c.stopCtx
	c.mu.Unlock()
	if ctx == nil {
		return c.v.Ctx, func() bool { return false }
	}
	return ctx, func() bool { return ctx.Err() != nil && c.v.Ctx.Err() == nil }
}
