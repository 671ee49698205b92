package splitwriter

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/messages"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// A Fail of a held tenancy whose split record the split-writer actor had
// already lost (deleted outside the library) writes nothing and must say
// so: Fenced, never nil.
func TestFailWithoutARecordIsFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, writer, rec, sent := spawnLoneSplitWriter(t, wire.HeldSplit{Split: "a", Epoch: 1})
		e.Send(writer, messages.FailSplit{Split: "a", Epoch: 1, Reason: "poison", ReplyTo: rec})
		synctest.Wait()
		msgs := sent()
		var reply *messages.FailSplitReply
		for _, m := range msgs {
			if fr, ok := m.(messages.FailSplitReply); ok {
				reply = &fr
			}
		}
		if reply == nil || coordination.KindOf(reply.Err) != coordination.Fenced {
			t.Fatalf("reply %+v (messages %v), want Fenced", reply, msgs)
		}
	})
}

// A write with nothing to write on is refused without I/O, and its result
// still answers as the write's own would: a hand-back or completion of a
// split whose record left the view resolves without a write.
func TestRefusedWritesStillAnswer(t *testing.T) {
	tests := []struct {
		name string
		send []any
		want func(m any) bool
	}{
		{"hand-back without a record", []any{messages.ReleaseSplits{Tenancies: []messages.Tenancy{{Split: "a", Epoch: 1}}}},
			func(m any) bool {
				return m == wire.HandBackResolved{Split: "a", Epoch: 1, Reason: wire.EndReleased, Outcome: wire.HandBackFenced}
			}},
		{"completion without a record", []any{wire.EndTenancy{Split: "a", Epoch: 1, Reason: wire.EndCompleted}},
			func(m any) bool {
				return m == wire.HandBackResolved{Split: "a", Epoch: 1, Reason: wire.EndCompleted, Outcome: wire.HandBackLanded}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, writer, _, sent := spawnLoneSplitWriter(t, wire.HeldSplit{Split: "a", Epoch: 1})
				for _, m := range tt.send {
					e.Send(writer, m)
				}
				synctest.Wait()
				msgs := sent()
				if !slices.ContainsFunc(msgs, tt.want) {
					t.Fatalf("messages %v lack the expected answer", msgs)
				}
			})
		})
	}
}

// spawnLoneSplitWriter starts a split-writer actor whose every peer is one
// recording actor, rec; sent returns a copy of what rec has received.
func spawnLoneSplitWriter(t *testing.T, held ...wire.HeldSplit) (e *actor.Engine, writer, rec *actor.PID, sent func() []any) {
	e, clk := workertest.NewEngine(t)
	return spawnLoneSplitWriterOn(t, e, clk, memstore.New(1500*time.Millisecond, memstore.WithClock(clk)), held...)
}

// raised is the message the split writer tells the root raising evs.
func raised(evs ...coordination.Event) wire.EventsRaised {
	return wire.EventsRaised{Events: evs}
}

// spawnLoneSplitWriterOn is spawnLoneSplitWriter on e, clk and st, for
// worker w1 in session n, holding the tenancies held (as won claims of
// session n would have started them).
func spawnLoneSplitWriterOn(t *testing.T, e *actor.Engine, clk *clock.Mock, st store.Store, held ...wire.HeldSplit) (_ *actor.Engine, writer, rec *actor.PID, sent func() []any) {
	return spawnLoneSplitWriterOnWith(t, e, clk, st, nil, held...)
}

// spawnLoneSplitWriterOnWith is spawnLoneSplitWriterOn with tweak (nil:
// none) applied to the worker's Env before the actor is spawned.
func spawnLoneSplitWriterOnWith(t *testing.T, e *actor.Engine, clk *clock.Mock, st store.Store, tweak func(*worker.Env), held ...wire.HeldSplit) (_ *actor.Engine, writer, rec *actor.PID, sent func() []any) {
	var mu sync.Mutex
	var msgs []any
	rec = e.Spawn(func() actor.Receiver { return workertest.Recorder{Mu: &mu, Msgs: &msgs} }, "rec")
	v := workertest.ActorEnv(e, st, workertest.Config(t, clk, "w1"), "n", nil)
	v.PIDs = worker.PIDs{Root: rec, Lease: rec, Revoke: rec}
	if tweak != nil {
		tweak(v)
	}
	v.PIDs.SplitWriter = e.Spawn(func() actor.Receiver {
		sw := New(v)().(*splitWriterActor)
		for _, h := range held {
			sw.reg.start(h.Split, worker.Tenancy{Epoch: h.Epoch, Nonce: "n"})
		}
		return sw
	}, "splitwriter")
	t.Cleanup(func() {
		v.Cancel()
		<-e.Poison(v.PIDs.SplitWriter).Done()
		<-e.Poison(rec).Done()
		v.WG.Wait()
	})
	return e, v.PIDs.SplitWriter, rec, func() []any {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(msgs)
	}
}

// A split record naming this session that the worker neither holds nor is
// assigned (a claim whose reply was lost) is handed back by a real write
// once the claimer sees it, and the claimer then leaves it alone.
func TestALeftoverNotAssignedIsReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, clk := workertest.NewEngine(t)
		st := memstore.New(1500*time.Millisecond, memstore.WithClock(clk))
		left := protocol.SplitRecord{ID: "a", Weight: 1, Epoch: 1, Owner: "w1", Nonce: "n", Status: protocol.StatusRunnable}
		rev := workertest.Put(t, st, protocol.SplitKey("a"), protocol.EncodeSplit(left), 0)
		_, writer, _, _ := spawnLoneSplitWriterOn(t, e, clk, st)
		for _, m := range []any{
			wire.WatchesChanged{Live: true},
			assignmentOf("b"),
			recordmsg.RecordsChanged{Records: []recordmsg.RecordChanged{{Split: "a", Record: left, Rev: rev}}},
		} {
			e.Send(writer, m)
		}
		synctest.Wait()
		r, revision := readSplit(t, st, "a")
		if r.Owner != "" || r.Epoch != 1 || revision != rev+1 {
			t.Fatalf("record %+v at revision %d, want handed back (owner null, epoch 1) by one write after %d", r, revision, rev)
		}
	})
}

// The split writer claims for the session the lease last told it of: after
// a new session (a live SessionChanged), a claim writes the new session's nonce,
// not the first one's (Env.Nonce).
func TestClaimsCarryTheNewSessionsNonce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, clk := workertest.NewEngine(t)
		st := memstore.New(1500*time.Millisecond, memstore.WithClock(clk))
		workertest.Put(t, st, protocol.SpecKey("a"), protocol.EncodeSpec(protocol.NewSpec(coordination.SplitSpec{ID: "a", Weight: 1}, 0, 1)), 0)
		runnable := protocol.SplitRecord{ID: "a", Weight: 1, Status: protocol.StatusRunnable}
		rev := workertest.Put(t, st, protocol.SplitKey("a"), protocol.EncodeSplit(runnable), 0)
		_, writer, _, _ := spawnLoneSplitWriterOn(t, e, clk, st)
		for _, m := range []any{
			wire.SessionChanged{},
			wire.SessionChanged{Live: true, Nonce: "n2"},
			wire.WatchesChanged{Live: true},
			assignmentOf("a"),
			recordmsg.RecordsChanged{Records: []recordmsg.RecordChanged{{Split: "a", Record: runnable, Rev: rev}}},
		} {
			e.Send(writer, m)
		}
		synctest.Wait()
		r, _ := readSplit(t, st, "a")
		if r.Owner != "w1" || r.Nonce != "n2" {
			t.Fatalf("record %+v, want claimed by w1 in session n2", r)
		}
	})
}

// readSplit reads and decodes split id's record from st, with its revision.
func readSplit(t *testing.T, st store.Store, id coordination.SplitID) (protocol.SplitRecord, uint64) {
	t.Helper()
	got, ok, err := st.Get(context.Background(), store.Durable, protocol.SplitKey(id))
	if err != nil || !ok {
		t.Fatalf("read %s: %v %v", id, ok, err)
	}
	r, err := protocol.DecodeSplit(protocol.SplitKey(id), got.Value, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r, uint64(got.Revision)
}

// splitUpdates is a store that counts the updates of one split's record.
type splitUpdates struct {
	store.Store
	key string
	mu  sync.Mutex
	n   int
}

func (s *splitUpdates) Update(ctx context.Context, ks store.Keyspace, key string, v []byte, rev store.Revision) (store.Revision, bool, error) {
	if ks == store.Durable && key == s.key {
		s.mu.Lock()
		s.n++
		s.mu.Unlock()
	}
	return s.Store.Update(ctx, ks, key, v, rev)
}

// gatedUpdate is a store whose first update of one record waits until
// gate is closed (or the caller's context ends): a claim held in flight.
type gatedUpdate struct {
	store.Store
	key  string
	gate chan struct{} // closed by the test
	mu   sync.Mutex
	held bool // the first update of key came
}

// claimA makes writer claim split a, whose record is fresh at rev (the
// watches live, a assigned), and returns send, which sends writer messages
// and waits for it to settle.
func claimA(e *actor.Engine, writer *actor.PID, fresh protocol.SplitRecord, rev uint64) (send func(msgs ...any)) {
	send = func(msgs ...any) {
		for _, m := range msgs {
			e.Send(writer, m)
		}
		synctest.Wait()
	}
	send(wire.WatchesChanged{Live: true},
		assignmentOf("a"),
		recordmsg.RecordsChanged{Records: []recordmsg.RecordChanged{{Split: "a", Record: fresh, Rev: rev}}})
	return send
}

// holdClaim is claimA with the claim's write held by st: it sends during
// while the claim is in flight, lets the write through, then sends after.
func holdClaim(t *testing.T, e *actor.Engine, writer *actor.PID, st *gatedUpdate, fresh protocol.SplitRecord, rev uint64, during, after []any) {
	t.Helper()
	send := claimA(e, writer, fresh, rev)
	if !st.waiting() {
		t.Fatal("no claim of a in flight")
	}
	send(during...)
	close(st.gate)
	synctest.Wait()
	send(after...)
}

// waiting reports whether the first update of the key came.
func (s *gatedUpdate) waiting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

func (s *gatedUpdate) Update(ctx context.Context, ks store.Keyspace, key string, v []byte, rev store.Revision) (store.Revision, bool, error) {
	if ks == store.Durable && key == s.key {
		s.mu.Lock()
		first := !s.held
		s.held = true
		s.mu.Unlock()
		if first {
			select {
			case <-s.gate:
			case <-ctx.Done():
				return 0, false, ctx.Err()
			}
		}
	}
	return s.Store.Update(ctx, ks, key, v, rev)
}

// The split writer asks the write a tenancy's end calls for in the step
// that applies the end (a Release here): the surrendered split, whose record still names this session
// and which is not assigned, is never taken for a leftover to return while
// its hand-back is asked and not resolved. One update writes it.
func TestASurrenderedSplitIsNotReturnedAsALeftover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, clk := workertest.NewEngine(t)
		st := &splitUpdates{Store: memstore.New(1500*time.Millisecond, memstore.WithClock(clk)), key: protocol.SplitKey("a")}
		held := protocol.SplitRecord{ID: "a", Weight: 1, Epoch: 1, Owner: "w1", Nonce: "n", Status: protocol.StatusRunnable}
		rev := workertest.Put(t, st, protocol.SplitKey("a"), protocol.EncodeSplit(held), 0)
		_, writer, _, sent := spawnLoneSplitWriterOn(t, e, clk, st, wire.HeldSplit{Split: "a", Epoch: 1})
		for _, m := range []any{
			wire.WatchesChanged{Live: true},
			assignmentOf("b"),
			recordmsg.RecordsChanged{Records: []recordmsg.RecordChanged{{Split: "a", Record: held, Rev: rev}}},
			messages.ReleaseSplits{Tenancies: []messages.Tenancy{{Split: "a", Epoch: 1}}},
		} {
			e.Send(writer, m)
		}
		synctest.Wait()
		r, revision := readSplit(t, st, "a")
		if r.Owner != "" || revision != rev+1 {
			t.Fatalf("record %+v at revision %d, want handed back by one write after %d", r, revision, rev)
		}
		if !slices.Contains(sent(), any(wire.HandBackResolved{Split: "a", Epoch: 1, Reason: wire.EndReleased, Outcome: wire.HandBackLanded})) {
			t.Fatalf("sent %v, want the hand-back landed", sent())
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.n != 1 {
			t.Fatalf("%d updates of the split record, want 1 (the hand-back; no leftover return)", st.n)
		}
	})
}

// assignmentOf is a put of this worker's assignment record naming ids, of
// generation 0 (applied after any record of generation 0).
func assignmentOf(ids ...coordination.SplitID) recordmsg.AssignmentChanged {
	return assignmentAt(0, ids...)
}

// assignmentAt is a put of this worker's assignment record of generation
// gen naming ids.
func assignmentAt(gen uint64, ids ...coordination.SplitID) recordmsg.AssignmentChanged {
	return recordmsg.AssignmentChanged{Instance: "w1", Assignment: protocol.AssignmentRecord{Generation: gen, Splits: ids}}
}
