package commitwriter

import (
	"context"
	"fmt"
	"hash/maphash"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
)

// commitWriterShards is how many shards the commit writer has: commits of
// splits in different shards never queue behind one another.
const commitWriterShards = 16

// commitWriter is one shard of the commit-writing actor (docs/architecture.md,
// "The commit path"). It owns the progress cells of the tenancies whose
// split hashes to it: from a tenancy's Gained on, the shard is the only
// writer of its progress record. It takes four messages, in the order they
// were posted: OpenCell and TenancyEnded from the split writer, CutAsked
// from assign, CommitRequest from the handle, which it answers with a
// CommitResult; it tells the revoke actor CommitLanded and asks the split
// writer EndTenancy for a completed or fenced commit (endTenancy).
type commitWriter struct {
	v     *worker.Env
	box   *mailbox
	cells map[coordination.SplitID]*progressCell // touched only by the turn's holder
}

// progressCell is one tenancy's progress record as this worker last wrote
// it, with the tenancy's runtime-split state (commitcut.go, cutask.go).
type progressCell struct {
	fp    uint64 // H(the job's fingerprint), which the records carry (OpenCell)
	epoch uint64
	prog  protocol.ProgressRecord
	rev   uint64
	gen   uint64 // the split's spec generation, which a residual's spec copies
	// confirmed is the counter of this tenancy's latest cut whose residual
	// is confirmed (both records exist); 0: none.
	confirmed uint64
	cutting   bool      // a CommitCut returned without confirming its residual
	askedAt   time.Time // when the last cut request was emitted; zero: never
	payloads  bool      // an exactly-once commit was asked (commitpayload.go)
}

// Writers are the commit writer's shards; a split's shard is picked by a
// hash of its id under seed. The routing reaches them as worker.Env.Commits.
type Writers struct {
	seed   maphash.Seed
	shards []*commitWriter
}

// New returns worker v's commit writer, its shards not running yet
// (Start runs them).
func New(v *worker.Env) Writers {
	ws := Writers{seed: maphash.MakeSeed(), shards: make([]*commitWriter, commitWriterShards)}
	for i := range ws.shards {
		ws.shards[i] = &commitWriter{v: v, box: newMailbox(), cells: map[coordination.SplitID]*progressCell{}}
	}
	return ws
}

// of returns the shard that owns split id's progress cells.
func (ws Writers) of(id coordination.SplitID) *commitWriter {
	return ws.shards[maphash.String(ws.seed, string(id))%commitWriterShards]
}

// Post queues msg on the shard of the split it concerns (commitDesk).
func (ws Writers) Post(msg any) { ws.of(splitOf(msg)).box.post(msg) }

// Ask runs req on its split's shard (commitDesk).
func (ws Writers) Ask(req worker.CommitRequest) worker.CommitResult {
	return ws.of(req.Split).ask(req)
}

// Start runs each shard's goroutine until the worker shuts down.
func (ws Writers) Start() {
	for _, w := range ws.shards {
		w.v.Go(w.run)
	}
}

// splitOf returns the split a message for the commit writer is about.
func splitOf(msg any) coordination.SplitID {
	switch m := msg.(type) {
	case worker.OpenCell:
		return m.Split
	case worker.CommitRequest:
		return m.Split
	case worker.CutAsked:
		return m.Split
	case wire.TenancyEnded:
		return m.Split
	}
	panic(fmt.Sprintf("actors: %T is not a commit writer's message", msg))
}

// run processes what is posted to the shard until the worker shuts down.
func (w *commitWriter) run(ctx context.Context) {
	for {
		batch := w.box.next(ctx)
		if batch == nil {
			return
		}
		for _, msg := range batch {
			w.receive(msg)
		}
		w.box.endTurn()
	}
}

func (w *commitWriter) receive(msg any) {
	switch m := msg.(type) {
	case worker.OpenCell:
		w.cells[m.Split] = &progressCell{fp: m.FP, epoch: m.Epoch, prog: m.Prog, rev: m.Rev, gen: m.Generation}
	case wire.TenancyEnded:
		w.close(m.Split, m.Epoch)
	case worker.CommitRequest:
		m.Reply <- w.commit(m)
	case worker.CutAsked:
		w.cutAsked(m)
	default:
		panic(fmt.Sprintf("actors: the commit writer got %T", msg))
	}
}

// ask runs req and returns its result: on the caller's goroutine when the
// shard is idle with nothing queued, else through the shard's mailbox, in
// order, giving up when req.ctx ends.
func (w *commitWriter) ask(req worker.CommitRequest) worker.CommitResult {
	if w.box.tryTurn() {
		defer w.box.endTurn()
		return w.commit(req)
	}
	req.Reply = make(chan worker.CommitResult, 1)
	w.v.PostCommit(req)
	select {
	case res := <-req.Reply:
		return res
	case <-req.Ctx.Done():
		return worker.CommitResult{Err: worker.StoreErr(fmt.Sprintf("committing split %s", req.Split), req.Ctx.Err())}
	}
}

// close ends the cell of tenancy (id, epoch): later commits of it are not
// held.
func (w *commitWriter) close(id coordination.SplitID, epoch uint64) {
	if c := w.cells[id]; c != nil && c.epoch == epoch {
		delete(w.cells, id)
	}
}

// commit writes one commit and tells the actors its outcome: CommitLanded
// to revoke, EndTenancy to the root when it completed the split or found
// the tenancy fenced.
func (w *commitWriter) commit(req worker.CommitRequest) worker.CommitResult {
	id, epoch := req.Split, req.Epoch
	cell := w.cells[id]
	if cell == nil || cell.epoch != epoch {
		return worker.CommitResult{Err: worker.NotHeld(id)}
	}
	if req.Cut != nil {
		return w.commitCut(req, cell)
	}
	if req.Payload != nil || cell.payloads {
		return w.commitPayload(req, cell) // commitpayload.go
	}
	d := casProgress(req.Ctx, w.v, id, cell, req.Progress, nil)
	switch d.Outcome {
	case worker.CASLanded:
		w.landed(id, epoch, cell, d)
		return worker.CommitResult{Landed: true}
	}
	return w.notLanded(id, epoch, d)
}

// notLanded settles a commit of tenancy (id, epoch) that did not land (d):
// a fenced one ends the tenancy, a Fatal one latches.
func (w *commitWriter) notLanded(id coordination.SplitID, epoch uint64, d worker.CASResult[protocol.ProgressRecord]) worker.CommitResult {
	switch d.Outcome {
	case worker.CASFenced:
		w.close(id, epoch)
		w.endTenancy(id, epoch, wire.EndFenced)
	case worker.CASFatal:
		w.v.FailNow(d.Err)
	default:
		w.v.FatalIf(d.Err)
	}
	return worker.CommitResult{Err: d.Err}
}

// landed records a commit of the cell's tenancy that landed (d) and tells
// the revoke actor, unless it was an earlier attempt found landed. When the
// record landed completed (this commit's, or an earlier completing one
// found by the read-back), it closes the cell, asks the root to end the
// tenancy and reports completed.
func (w *commitWriter) landed(id coordination.SplitID, epoch uint64, cell *progressCell, d worker.CASResult[protocol.ProgressRecord]) (completed bool) {
	cell.advance(d.Rec, d.Rev)
	if !d.Adopted {
		w.v.Tell(wire.CommitLanded{Split: id, Epoch: epoch}, w.v.PIDs.Revoke)
	}
	if d.Rec.Completed {
		w.close(id, epoch)
		w.endTenancy(id, epoch, wire.EndCompleted)
	}
	return d.Rec.Completed
}

// endTenancy asks the split writer, the tenancy registry's owner, to end
// tenancy (id, epoch) for reason (a completed or fenced commit).
func (w *commitWriter) endTenancy(id coordination.SplitID, epoch uint64, reason wire.EndReason) {
	w.v.Tell(wire.EndTenancy{Split: id, Epoch: epoch, Reason: reason}, w.v.PIDs.SplitWriter)
}

// advance records a write of the cell's tenancy that landed at rev, unless
// a newer one is already recorded.
func (c *progressCell) advance(prog protocol.ProgressRecord, rev uint64) {
	if rev > c.rev {
		c.prog, c.rev = prog, rev
	}
}
