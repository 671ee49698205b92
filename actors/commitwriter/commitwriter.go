package commitwriter

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// commitWriterShards is how many shards the commit writer has: commits of
// splits in different shards never queue behind one another.
const commitWriterShards = 16

// CommitRequest asks for one commit of progress on the tenancy (split,
// epoch) whose Gained Poll handed out (the handle's Commit, CommitFinal,
// CommitCut and CommitTx). Cut, when set, makes it a cut commit (CommitCut;
// docs/protocol.md, "Runtime split", "The steps").
type CommitRequest struct {
	Ctx      context.Context // bounds the write (OpTimeout, the stop)
	Split    coordination.SplitID
	Epoch    uint64
	Progress coordination.SplitProgress
	Cut      *coordination.Cut
	// Payload, when set, makes it an exactly-once commit (CommitTx;
	// commitpayload.go): the statements run in the write's transaction.
	Payload store.TxFunc
	// reply (capacity 1), set by ask when it posts the request to a busy
	// shard, gets the result.
	reply chan CommitResult
}

// CommitResult is a commit's outcome.
type CommitResult struct {
	Err      error                // Commit's (or CommitCut's, CommitTx's) result
	Landed   bool                 // the write is durable
	Residual coordination.SplitID // a cut commit's residual, once it is confirmed
}

// commitWriter is one shard of the commit-writing actor (docs/architecture.md,
// "The commit path"). It owns the progress cells of the tenancies whose
// split hashes to it: from a tenancy's Gained on, the shard is the only
// writer of its progress record. It takes three messages, in the order
// they were posted: CellChanged and CutAsked from the split writer,
// CommitRequest from the handle, which it answers with a
// CommitResult (commitwrite.go); it tells the revoke actor CommitLanded
// and asks the split writer EndTenancy for a completed or fenced commit.
type commitWriter struct {
	v     *worker.Env
	box   *mailbox
	cells map[coordination.SplitID]*progressCell // touched only by the turn's holder
}

// progressCell is one tenancy's progress record as this worker last wrote
// it, with the tenancy's runtime-split state (commitcut.go, cutask.go).
type progressCell struct {
	fp    uint64 // H(the job's fingerprint), which the records carry (CellChanged)
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
// hash of its id under seed. The handle asks them its commits (Ask); the
// actors post to them through worker.Env.Commits (Post).
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

// Post queues msg (CellChanged, CutAsked) on the shard of the split it
// concerns, behind what was posted there before (worker.Env.PostCommit).
func (ws Writers) Post(msg any) { ws.of(splitOf(msg)).box.post(msg) }

// Ask runs req on its split's shard and returns its result: on the
// caller's goroutine when the shard is idle with nothing queued, else
// through the shard's mailbox, in order, giving up when req.Ctx ends.
func (ws Writers) Ask(req CommitRequest) CommitResult {
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
	case worker.CellChanged:
		return m.Split
	case CommitRequest:
		return m.Split
	case worker.CutAsked:
		return m.Split
	}
	panic(fmt.Sprintf("actors: %T is not a commit writer's message", msg))
}

// ask is Ask on this shard: the caller takes the turn when the shard is
// idle and nothing is queued, so nothing posted before is overtaken and
// the common commit costs no hand-off between goroutines.
func (w *commitWriter) ask(req CommitRequest) CommitResult {
	if w.box.tryTurn() {
		defer w.box.endTurn()
		return w.commit(req) // commitwrite.go
	}
	req.reply = make(chan CommitResult, 1)
	w.box.post(req)
	select {
	case res := <-req.reply:
		return res
	case <-req.Ctx.Done():
		return CommitResult{Err: worker.StoreErr(fmt.Sprintf("committing split %s", req.Split), req.Ctx.Err())}
	}
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
	case worker.CellChanged: // from the split writer, as a tenancy starts or ends
		w.cellChanged(m)
	case CommitRequest: // from the handle, which found the shard busy (ask)
		m.reply <- w.commit(m)
	case worker.CutAsked: // from assign
		w.cutAsked(m)
	default:
		panic(fmt.Sprintf("actors: the commit writer got %T", msg))
	}
}

// cellChanged opens the cell of the tenancy m names, or closes it.
func (w *commitWriter) cellChanged(m worker.CellChanged) {
	if m.Closed {
		w.close(m.Split, m.Epoch)
		return
	}
	w.cells[m.Split] = &progressCell{fp: m.FP, epoch: m.Epoch, prog: m.Prog, rev: m.Rev, gen: m.Generation}
}

// close ends the cell of tenancy (id, epoch): later commits of it are not
// held.
func (w *commitWriter) close(id coordination.SplitID, epoch uint64) {
	if c := w.cells[id]; c != nil && c.epoch == epoch {
		delete(w.cells, id)
	}
}

// advance records a write of the cell's tenancy that landed at rev, unless
// a newer one is already recorded.
func (c *progressCell) advance(prog protocol.ProgressRecord, rev uint64) {
	if rev > c.rev {
		c.prog, c.rev = prog, rev
	}
}

// mailbox is a shard's inbox (the shard runs outside the hollywood
// engine). Messages are processed one at a time, in the order they were
// posted, by whoever holds the turn: the shard's own goroutine, or a
// sender that found the mailbox idle and empty and processes its one
// message on its own goroutine (tryTurn). The second way is why the commit
// writer is not a hollywood actor: a hop to another goroutine and back
// costs two thread wake-ups on every commit (docs/architecture.md, "The
// commit path").
type mailbox struct {
	mu    sync.Mutex
	queue []any
	busy  bool          // someone holds the turn
	bell  chan struct{} // capacity 1: wakes the shard's goroutine
}

func newMailbox() *mailbox { return &mailbox{bell: make(chan struct{}, 1)} }

// post appends msg for the shard's goroutine.
func (m *mailbox) post(msg any) {
	m.mu.Lock()
	m.queue = append(m.queue, msg)
	m.mu.Unlock()
	m.ring()
}

func (m *mailbox) ring() {
	select {
	case m.bell <- struct{}{}:
	default:
	}
}

// tryTurn takes the turn if the mailbox is idle and empty, so that nothing
// posted earlier is overtaken. The caller then processes one message and
// calls endTurn.
func (m *mailbox) tryTurn() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.busy || len(m.queue) > 0 {
		return false
	}
	m.busy = true
	return true
}

// endTurn gives the turn back; what was posted meanwhile goes to the
// shard's goroutine.
func (m *mailbox) endTurn() {
	m.mu.Lock()
	m.busy = false
	more := len(m.queue) > 0
	m.mu.Unlock()
	if more {
		m.ring()
	}
}

// next waits until it holds the turn with messages to process and returns
// them, oldest first; the caller calls endTurn once it processed them. It
// returns nil when ctx ends.
func (m *mailbox) next(ctx context.Context) []any {
	for {
		m.mu.Lock()
		if !m.busy && len(m.queue) > 0 {
			batch := m.queue
			m.queue, m.busy = nil, true
			m.mu.Unlock()
			return batch
		}
		m.mu.Unlock()
		select {
		case <-m.bell:
		case <-ctx.Done():
			return nil
		}
	}
}
