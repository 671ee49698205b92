package splitwriter

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// Depart returns exactly the leftovers of this worker (docs/protocol.md,
// "Departure"): runnable records naming this worker that it does not hold
// and does not hand back in the same batch, naming its current session or
// written by a claim of it that began no tenancy (whatever session they
// name, while unchanged). Another record of an earlier session of this
// instance, of another worker, a terminal one or an unowned one is left
// alone.
func TestDepartLeftoversAreThisSessionsUnheldRecords(t *testing.T) {
	v := workertest.NewEnv(t, memstore.New(time.Second)) // id "me", session "n"
	sw := New(v)().(*splitWriterActor)
	rec := func(owner, nonce string, st protocol.Status) protocol.SplitRecord {
		return protocol.SplitRecord{Owner: owner, Nonce: nonce, Epoch: 3, Status: st}
	}
	for id, r := range map[coordination.SplitID]protocol.SplitRecord{
		"leftover":        rec("me", "n", protocol.StatusRunnable),
		"held":            rec("me", "n", protocol.StatusRunnable),
		"handed-back":     rec("me", "n", protocol.StatusRunnable),
		"earlier-session": rec("me", "old", protocol.StatusRunnable),
		"other-worker":    rec("w2", "n", protocol.StatusRunnable),
		"completed":       rec("me", "n", protocol.StatusCompleted),
		"quarantined":     rec("me", "", protocol.StatusQuarantined),
		"unowned":         rec("", "", protocol.StatusRunnable),
		"outlived":        rec("me", "old", protocol.StatusRunnable),
		"erred":           rec("me", "old", protocol.StatusRunnable),
		"stranded-moved":  rec("me", "old", protocol.StatusRunnable),
	} {
		sw.records[id] = worker.SplitEntry{Rec: r, Rev: 7}
	}
	sw.claims.stranded["outlived"] = strandedClaim{rev: 7}
	sw.claims.stranded["erred"] = strandedClaim{rev: 7, complete: true}
	sw.claims.stranded["stranded-moved"] = strandedClaim{rev: 6} // the view shows a newer revision
	sw.reg.start("held", worker.Tenancy{Epoch: 3, Nonce: "n"})
	ops := sw.departLeftovers([]wire.HeldSplit{{Split: "handed-back", Epoch: 3}}, 9)
	var got []coordination.SplitID
	for _, o := range ops {
		op, ok := o.(departLeftoverOp)
		if !ok || op.batch != 9 {
			t.Errorf("op %+v, want a departure leftover return in batch 9", o)
		}
		got = append(got, o.target())
	}
	slices.Sort(got)
	if !slices.Equal(got, []coordination.SplitID{"erred", "leftover", "outlived"}) {
		t.Errorf("leftovers returned on Depart: %v, want [erred leftover outlived]", got)
	}
	for id, want := range map[coordination.SplitID]bool{"erred": true, "leftover": false, "outlived": false} {
		if complete, _ := sw.departReturn(id, sw.records[id]); complete != want {
			t.Errorf("%s: returned by its completion %v, want %v", id, complete, want)
		}
	}
	// The session renewed its nonce (a self-fence): the record is an earlier
	// session's now, a Reclaim candidate, not this session's leftover; the
	// stranded claims' records still are this worker's.
	sw.nonce = "n2" // as a live SessionChanged sets it
	if ops := sw.departLeftovers(nil, 10); len(ops) != 2 {
		t.Errorf("after a new session: %d leftovers, want 2 (outlived, erred)", len(ops))
	}
}

// Depart hands back every leftover of this worker, including the records
// of its claims that began no tenancy whatever session they name
// (docs/protocol.md, "Departure"): a claim that outlived its session is
// handed back, no attempt charged, so its next claimant takes it as
// Released rather than as an ended session's Expired; a claim whose
// completion erred is completed at its epoch. (Depart used to return only
// records naming the current session: an outlived claim's record was left
// when another session had been announced, and an erred completion was
// handed back, or left, instead of written.)
func TestDepartHandsBackTheClaimsThatBeganNoTenancy(t *testing.T) {
	ended, renewed := wire.SessionChanged{}, wire.SessionChanged{Live: true, Nonce: "n2"}
	tests := []struct {
		name          string
		completed     bool  // the progress record is completed and the claim's completion errs
		during, after []any // sent while the claim is in flight, and after it returned
		wantStatus    protocol.Status
		wantEpoch     uint64 // the final record's, no attempt charged
		wantOwner     string // and its owner, in session n if any
	}{
		{name: "outlived, no session since", during: []any{ended},
			wantStatus: protocol.StatusRunnable, wantEpoch: 1},
		{name: "outlived, a new session began and ended while it was in flight", during: []any{ended, renewed, ended},
			wantStatus: protocol.StatusRunnable, wantEpoch: 1},
		{name: "outlived, a new session is live but the watches are not", during: []any{ended, renewed, wire.WatchesChanged{}},
			wantStatus: protocol.StatusRunnable, wantEpoch: 1},
		{name: "its completion erred", completed: true,
			wantStatus: protocol.StatusCompleted, wantEpoch: 2, wantOwner: "w1"},
		{name: "its completion erred, then a new session began", completed: true, after: []any{ended, renewed},
			wantStatus: protocol.StatusCompleted, wantEpoch: 2, wantOwner: "w1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, clk := workertest.NewEngine(t)
				mem := memstore.New(1500*time.Millisecond, memstore.WithClock(clk))
				key := protocol.SplitKey("a")
				var under store.Store = mem
				if tt.completed {
					under = &failedUpdate{Store: mem, key: key, nth: 2} // the claim's completion
				}
				st := &gatedUpdate{Store: under, key: key, gate: make(chan struct{})}
				workertest.Put(t, mem, protocol.SpecKey("a"), protocol.EncodeSpec(protocol.NewSpec(coordination.SplitSpec{ID: "a", Weight: 1}, 0, 1)), 0)
				fresh := protocol.SplitRecord{ID: "a", Weight: 1, Status: protocol.StatusRunnable}
				if tt.completed {
					fresh.Epoch = 1 // handed back; its progress record completed at epoch 1
					done := protocol.FreshProgress("a", 0, "dead", 1, 0).Commit(coordination.SplitProgress{Watermark: 9, Completed: true}, 0)
					workertest.Put(t, mem, protocol.ProgressKey("a"), protocol.EncodeProgress(done), 0)
				}
				rev := workertest.Put(t, mem, key, protocol.EncodeSplit(fresh), 0)
				_, writer, rec, sent := spawnLoneSplitWriterOn(t, e, clk, st)
				holdClaim(t, e, writer, st, fresh, rev, tt.during, tt.after)
				e.Send(writer, wire.DepartJob{ReplyTo: rec})
				synctest.Wait()
				r, _ := readSplit(t, mem, "a")
				wantNonce := map[string]string{"": "", "w1": "n"}[tt.wantOwner]
				if r.Owner != tt.wantOwner || r.Nonce != wantNonce || r.Status != tt.wantStatus || r.Epoch != tt.wantEpoch || r.Attempts != 0 {
					t.Fatalf("record %+v after Depart, want %v at epoch %d, owner %q, no attempt charged", r, tt.wantStatus, tt.wantEpoch, tt.wantOwner)
				}
				var replies []wire.DepartHandedBack
				for _, m := range sent() {
					if d, ok := m.(wire.DepartHandedBack); ok {
						replies = append(replies, d)
					}
				}
				if len(replies) != 1 || replies[0].Err != nil {
					t.Fatalf("Depart answered %+v, want one answer, no error", replies)
				}
			})
		})
	}
}

// failedUpdate is a store whose nth update of one record fails, without
// writing, with a Retryable error.
type failedUpdate struct {
	store.Store
	key string
	nth int
	mu  sync.Mutex
	n   int // the updates of key so far
}

func (s *failedUpdate) Update(ctx context.Context, ks store.Keyspace, key string, v []byte, rev store.Revision) (store.Revision, bool, error) {
	if ks == store.Durable && key == s.key {
		s.mu.Lock()
		s.n++
		fail := s.n == s.nth
		s.mu.Unlock()
		if fail {
			return 0, false, coordination.Errorf(coordination.Retryable, "injected: update of %s failed", key)
		}
	}
	return s.Store.Update(ctx, ks, key, v, rev)
}

// A leftover's return in Depart's batch that waits behind a write in flight
// on its split still has OpTimeout of its own once it starts: here the
// claim's progress fence lands only after its caller's timeout, so its
// split record names this session while the claim fails, and the return
// queued behind it must still hand the record back, uncharged
// (docs/protocol.md, "Departure"). With one deadline for the whole batch
// (Depart's start plus OpTimeout, as before) the fence used it up: the
// return failed "context deadline exceeded" and the split's next claimant
// was charged an attempt (TestFleetSystemProperty, L2).
func TestDepartReturnsALeftoverQueuedBehindASlowWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lc := claimALate(t, protocol.ProgressKey("a"))
		claimed, claimRev := readSplit(t, lc.mem, "a")
		if claimed.Owner != "w1" || !lc.st.waiting() {
			t.Fatalf("the claim's record names %q (fence waiting: %v), want w1 with its fence in flight", claimed.Owner, lc.st.waiting())
		}
		// The watch shows the claim's record; Depart begins while the fence
		// waits out its timeout.
		lc.send(recordmsg.RecordsChanged{Records: []recordmsg.RecordChanged{{Split: "a", Record: claimed, Rev: claimRev}}},
			wire.DepartJob{ReplyTo: lc.rec})
		time.Sleep(3 * lc.opTimeout) // the fence's timeout, then the return's write (fake time)
		synctest.Wait()
		if r, _ := readSplit(t, lc.mem, "a"); r.Owner != "" || r.Attempts != 0 {
			t.Fatalf("after Depart the record names %q with %d attempts, want it handed back uncharged", r.Owner, r.Attempts)
		}
	})
}

// A claim whose split record write lands only after its caller's timeout
// leaves a record naming this session that the view does not show (no
// watch event of it here). Depart, begun while the claim is in flight or
// after it erred, reads the record and hands it back uncharged, so the
// next claimant does not take it as Expired (docs/protocol.md,
// "Departure").
func TestDepartReturnsTheRecordOfAClaimThatDidNotConfirm(t *testing.T) {
	for _, tt := range []struct {
		name        string
		claimReturn bool // the claim returned its error before Depart began
		retry       bool // and its retry at the heartbeat lost to the landed write
	}{
		{name: "Depart while the claim is in flight"},
		{name: "Depart after the claim erred", claimReturn: true},
		{name: "Depart after the claim's retry lost to its own write", claimReturn: true, retry: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lc := claimALate(t, protocol.SplitKey("a"))
				if !lc.st.waiting() {
					t.Fatal("no claim of a in flight")
				}
				if tt.claimReturn {
					time.Sleep(2 * lc.opTimeout) // the claim's write lands late and reports its timeout (fake time)
					synctest.Wait()
					if r, _ := readSplit(t, lc.mem, "a"); r.Owner != "w1" {
						t.Fatalf("the claim's record names %q, want w1 (its write landed late)", r.Owner)
					}
				}
				if tt.retry {
					_, before := readSplit(t, lc.mem, "a")
					lc.send(wire.HeartbeatTicked{})
					time.Sleep(2 * lc.opTimeout)
					synctest.Wait()
					if _, after := readSplit(t, lc.mem, "a"); after != before {
						t.Fatalf("the retry wrote the record (revision %d, was %d); want it lost", after, before)
					}
				}
				lc.send(wire.DepartJob{ReplyTo: lc.rec})
				time.Sleep(4 * lc.opTimeout) // the claim's timeout, then the read and the return (fake time)
				synctest.Wait()
				if r, _ := readSplit(t, lc.mem, "a"); r.Owner != "" || r.Nonce != "" || r.Attempts != 0 || r.Epoch != 1 {
					t.Fatalf("after Depart the record is %+v, want the claim's epoch 1 handed back uncharged", r)
				}
			})
		})
	}
}

// lateClaim is a lone split writer's claim of split a on a store whose
// first write of one key lands after its caller's timeout.
type lateClaim struct {
	mem       store.Store // the store under st
	st        *lateWrite
	rec       *actor.PID // where replies go
	send      func(msgs ...any)
	opTimeout time.Duration
}

// claimALate starts a lateClaim whose late write is of key.
func claimALate(t *testing.T, key string) lateClaim {
	t.Helper()
	e, clk := workertest.NewEngine(t)
	mem := memstore.New(1500*time.Millisecond, memstore.WithClock(clk))
	st := &lateWrite{Store: mem, key: key}
	workertest.Put(t, mem, protocol.SpecKey("a"), protocol.EncodeSpec(protocol.NewSpec(coordination.SplitSpec{ID: "a", Weight: 1}, 0, 1)), 0)
	fresh := protocol.SplitRecord{ID: "a", Weight: 1, Status: protocol.StatusRunnable}
	rev := workertest.Put(t, mem, protocol.SplitKey("a"), protocol.EncodeSplit(fresh), 0)
	_, writer, rec, _ := spawnLoneSplitWriterOn(t, e, clk, st)
	return lateClaim{mem: mem, st: st, rec: rec, send: claimA(e, writer, fresh, rev), opTimeout: workertest.Config(t, clk, "w1").OpTimeout}
}

// lateWrite is a store whose first write (create or update) of one record
// waits for its caller's timeout, then lands and reports the timeout.
type lateWrite struct {
	store.Store
	key  string
	mu   sync.Mutex
	held bool // the first write of key came
}

// waiting reports whether the first write of the key came.
func (s *lateWrite) waiting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// late reports whether this write of key is the one to land late.
func (s *lateWrite) late(ks store.Keyspace, key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := ks == store.Durable && key == s.key && !s.held
	s.held = s.held || first
	return first
}

func (s *lateWrite) Create(ctx context.Context, ks store.Keyspace, key string, v []byte) (store.Revision, bool, error) {
	if !s.late(ks, key) {
		return s.Store.Create(ctx, ks, key, v)
	}
	<-ctx.Done()
	if _, _, err := s.Store.Create(context.WithoutCancel(ctx), ks, key, v); err != nil {
		return 0, false, err
	}
	return 0, false, coordination.Errorf(coordination.Retryable, "injected: write landed after the caller's timeout: %v", ctx.Err())
}

func (s *lateWrite) Update(ctx context.Context, ks store.Keyspace, key string, v []byte, rev store.Revision) (store.Revision, bool, error) {
	if !s.late(ks, key) {
		return s.Store.Update(ctx, ks, key, v, rev)
	}
	<-ctx.Done()
	if _, _, err := s.Store.Update(context.WithoutCancel(ctx), ks, key, v, rev); err != nil {
		return 0, false, err
	}
	return 0, false, coordination.Errorf(coordination.Retryable, "injected: write landed after the caller's timeout: %v", ctx.Err())
}
