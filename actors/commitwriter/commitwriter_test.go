package commitwriter

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// TestMailboxProcessesInPostOrderOneAtATime: senders that post and senders
// that take the turn themselves (tryTurn) never overtake what was posted
// before them, and no two goroutines ever hold the turn at once.
func TestMailboxProcessesInPostOrderOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const senders, each = 4, 500
		box := newMailbox()
		var holders atomic.Int32
		var order []string // appended only by the turn's holder
		process := func(msg any) {
			if n := holders.Add(1); n != 1 {
				t.Errorf("%d goroutines hold the turn", n)
			}
			order = append(order, msg.(string))
			holders.Add(-1)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			for {
				batch := box.next(ctx)
				if batch == nil {
					return
				}
				for _, m := range batch {
					process(m)
				}
				box.endTurn()
			}
		}()
		var wg sync.WaitGroup
		for s := range senders {
			wg.Go(func() {
				for i := range each {
					msg := fmt.Sprintf("%d/%04d", s, i)
					if i%2 == 0 && box.tryTurn() {
						process(msg)
						box.endTurn()
						continue
					}
					box.post(msg)
				}
			})
		}
		wg.Wait()
		synctest.Wait() // the shard's goroutine drained the queue and waits
		if len(order) != senders*each {
			t.Fatalf("processed %d messages, want %d", len(order), senders*each)
		}
		last := map[byte]string{}
		for _, m := range order {
			if prev := last[m[0]]; prev != "" && m < prev {
				t.Fatalf("sender %c: %s processed after %s", m[0], m, prev)
			}
			last[m[0]] = m
		}
	})
}

// TestMailboxTurnIsRefusedWhileBusyOrQueued: a sender may run its message
// itself only when nothing is in progress and nothing waits.
func TestMailboxTurnIsRefusedWhileBusyOrQueued(t *testing.T) {
	box := newMailbox()
	if !box.tryTurn() {
		t.Fatal("an idle, empty mailbox refused the turn")
	}
	if box.tryTurn() {
		t.Fatal("the turn was given twice")
	}
	box.post("queued")
	box.endTurn()
	if box.tryTurn() {
		t.Fatal("the turn was given while a message waits: it would overtake it")
	}
	if got := box.next(context.Background()); !slices.Equal(got, []any{"queued"}) {
		t.Fatalf("next = %v", got)
	}
	box.endTurn()
	if !box.tryTurn() {
		t.Fatal("the turn was refused once the queue was drained")
	}
}

// loneCommitWriter is one commit-writer shard on a memstore whose peers
// (root, revoke) are one recording actor; run starts its goroutine, sent
// returns what the peers received. The store holds a's progress record as
// the fence of tenancy (a, 2) of this worker ("me") left it.
type loneCommitWriter struct {
	w     *commitWriter
	st    *memstore.Store
	fence worker.CellChanged
	sent  func() []any
}

func newLoneCommitWriter(t *testing.T) *loneCommitWriter {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var msgs []any
	rec := e.Spawn(func() actor.Receiver { return workertest.Recorder{Mu: &mu, Msgs: &msgs} }, "rec")
	st := memstore.New(30 * time.Second)
	v := workertest.NewEnv(t, st) // worker "me" of job "job:v1"
	v.Engine = e
	v.Ctx, v.Cancel = context.WithCancel(context.Background())
	v.PIDs = worker.PIDs{Root: rec, Revoke: rec, SplitWriter: rec}
	ws := New(v)
	v.Commits = ws
	t.Cleanup(func() {
		v.Cancel()
		<-e.Poison(rec).Done()
	})
	fence := protocol.FreshProgress("a", workertest.FP, "me", 2, 0)
	rev := workertest.Put(t, st, protocol.ProgressKey("a"), protocol.EncodeProgress(fence), 0)
	return &loneCommitWriter{
		w: ws.of("a"), st: st,
		fence: worker.CellChanged{Split: "a", Epoch: 2, FP: workertest.FP, Prog: fence, Rev: rev},
		sent: func() []any {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(msgs)
		},
	}
}

func (l *loneCommitWriter) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.w.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func (l *loneCommitWriter) ask(ctx context.Context, epoch uint64, p coordination.SplitProgress) CommitResult {
	return l.w.ask(CommitRequest{Ctx: ctx, Split: "a", Epoch: epoch, Progress: p})
}

// runWithTheCell starts the shard's goroutine and opens the tenancy's cell.
func (l *loneCommitWriter) runWithTheCell(t *testing.T) {
	l.run(t)
	l.w.v.PostCommit(l.fence)
	synctest.Wait()
}

// askBehindTheCell posts the tenancy's cell while the shard's goroutine is
// not running, then asks a commit of watermark 5 on a goroutine of its own
// and returns its result channel once the commit is queued behind the cell.
func (l *loneCommitWriter) askBehindTheCell(t *testing.T, ctx context.Context) <-chan CommitResult {
	l.w.v.PostCommit(l.fence)
	res := make(chan CommitResult, 1)
	go func() { res <- l.ask(ctx, 2, coordination.SplitProgress{Watermark: 5}) }()
	synctest.Wait()
	if n := l.queued(); n != 2 {
		t.Fatalf("%d messages queued, want the cell and the commit", n)
	}
	return res
}

// queued is how many messages wait in the shard's mailbox.
func (l *loneCommitWriter) queued() int {
	l.w.box.mu.Lock()
	defer l.w.box.mu.Unlock()
	return len(l.w.box.queue)
}

func (l *loneCommitWriter) watermark(t *testing.T) int64 {
	e, _, err := l.st.Get(context.Background(), store.Durable, protocol.ProgressKey("a"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := protocol.DecodeProgress(e.Key, e.Value, protocol.Fingerprint("job:v1"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Watermark == nil {
		return -1
	}
	return *rec.Watermark
}

// TestACommitWaitsForTheCellPostedBeforeIt: a commit asked while the
// tenancy's opening CellChanged is still queued runs after it, through the shard's
// goroutine, and lands; taking the turn at once would have found no cell.
func TestACommitWaitsForTheCellPostedBeforeIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLoneCommitWriter(t)
		res := l.askBehindTheCell(t, context.Background())
		l.run(t)
		if r := <-res; !r.Landed || r.Err != nil {
			t.Fatalf("commit behind its cell: landed %v, %v", r.Landed, r.Err)
		}
		if got := l.watermark(t); got != 5 {
			t.Fatalf("watermark %d, want 5", got)
		}
		synctest.Wait()
		if got := l.sent(); !slices.Equal(got, []any{wire.CommitLanded{Split: "a", Epoch: 2}}) {
			t.Fatalf("told %#v, want CommitLanded", got)
		}
	})
}

// TestACommitOfAnEndedOrOtherTenancyWritesNothing: for an epoch other than
// the cell's, or once the split writer's CellChanged closed the cell, a
// commit is Fenced (not held) and the record keeps its last commit; the
// close of an earlier tenancy leaves the cell open.
func TestACommitOfAnEndedOrOtherTenancyWritesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLoneCommitWriter(t)
		l.runWithTheCell(t)
		if r := l.ask(context.Background(), 2, coordination.SplitProgress{Watermark: 5}); !r.Landed {
			t.Fatalf("first commit: %v", r.Err)
		}
		if r := l.ask(context.Background(), 1, coordination.SplitProgress{Watermark: 6}); r.Landed || coordination.KindOf(r.Err) != coordination.Fenced {
			t.Fatalf("commit of epoch 1 under the cell of epoch 2: landed %v, %v", r.Landed, r.Err)
		}
		l.w.v.PostCommit(worker.CellChanged{Split: "a", Epoch: 1, Closed: true})
		synctest.Wait()
		if r := l.ask(context.Background(), 2, coordination.SplitProgress{Watermark: 6}); !r.Landed {
			t.Fatalf("commit after the close of epoch 1: %v", r.Err)
		}
		l.w.v.PostCommit(worker.CellChanged{Split: "a", Epoch: 2, Closed: true})
		synctest.Wait()
		if r := l.ask(context.Background(), 2, coordination.SplitProgress{Watermark: 7}); r.Landed || coordination.KindOf(r.Err) != coordination.Fenced {
			t.Fatalf("commit after its cell closed: landed %v, %v", r.Landed, r.Err)
		}
		if got := l.watermark(t); got != 6 {
			t.Fatalf("watermark %d, want 6 (nothing written after the end)", got)
		}
	})
}

// TestACompletingCommitEndsTheTenancy: a commit that completes the split
// asks the root EndTenancy(EndCompleted) and closes the cell.
func TestACompletingCommitEndsTheTenancy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLoneCommitWriter(t)
		l.runWithTheCell(t)
		if r := l.ask(context.Background(), 2, coordination.SplitProgress{Watermark: 9, Completed: true}); !r.Landed {
			t.Fatalf("completing commit: %v", r.Err)
		}
		synctest.Wait()
		if got := l.sent(); !slices.Contains(got, any(wire.EndTenancy{Split: "a", Epoch: 2, Reason: wire.EndCompleted})) {
			t.Fatalf("told %#v, want EndTenancy completed", got)
		}
		if r := l.ask(context.Background(), 2, coordination.SplitProgress{Watermark: 10}); coordination.KindOf(r.Err) != coordination.Fenced {
			t.Fatalf("commit after completion: %v", r.Err)
		}
	})
}

// TestACommitGivesUpWhenItsContextEnds: a commit queued in a shard that
// does not get to it returns a Retryable error once its context ends.
func TestACommitGivesUpWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLoneCommitWriter(t)
		ctx, cancel := context.WithCancel(context.Background())
		res := l.askBehindTheCell(t, ctx) // never processed: no goroutine runs
		cancel()
		if r := <-res; r.Landed || coordination.KindOf(r.Err) != coordination.Retryable {
			t.Fatalf("abandoned commit: landed %v, %v", r.Landed, r.Err)
		}
	})
}
