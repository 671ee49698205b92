package actors

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/messages"
)

// A Fail the root accepted while the split-writer actor had already lost the
// split's record (deleted outside the library; its drop was still on the
// way to the root) writes nothing and must say so: Fenced, never nil.
func TestFailWithoutARecordIsFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, writer, rec, sent := spawnLoneSplitWriter(t)
		r.e.Send(writer, messages.FailSplit{Split: "a", Epoch: 1, Reason: "poison", ReplyTo: rec})
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

func TestPoisonSplitRunsMaxAttemptsThenStalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", workertest.FinalPlan("p"), func(c *coordination.Config) { c.MaxAttempts = 3 })
		tenancies := 0
		var lastEpoch coordination.LeaseEpoch
		r.until("stalled", 30*time.Second, []*member{w}, func() bool {
			if g, ok := w.held["p"]; ok && g.Epoch != lastEpoch {
				lastEpoch = g.Epoch
				tenancies++
				delete(w.held, "p")
				if err := w.c.Fail("p", g.Epoch, "poison"); err != nil {
					t.Fatalf("Fail: %v", err)
				}
			}
			_, ok := hasEvent[coordination.Stalled](w)
			return ok
		})
		if tenancies != 3 {
			t.Fatalf("%d tenancies, want 3", tenancies)
		}
		q, _ := hasEvent[coordination.Quarantined](w)
		if q.Split != "p" || q.Attempts != 3 {
			t.Fatalf("quarantined %+v", q)
		}
		if s, _ := hasEvent[coordination.Stalled](w); s.Completed != 0 || s.Quarantined != 1 {
			t.Fatalf("stalled %+v", s)
		}
		if _, ok := hasEvent[coordination.Lost](w); ok {
			t.Fatalf("Fail emitted Lost: %v", w.evs)
		}
		if _, ok := w.evs[len(w.evs)-1].(coordination.Stalled); !ok {
			t.Fatalf("verdict not last: %v", w.evs)
		}
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

// A write with nothing to write on is refused without I/O, and its result
// still answers as the write's own would: a hand-back or completion of a
// split whose record left the view resolves without a write, and a claim
// or leftover return asked after Depart began is abandoned.
func TestRefusedWritesStillAnswer(t *testing.T) {
	tests := []struct {
		name string
		send []any
		want func(m any) bool
	}{
		{"hand-back without a record", []any{messages.HandBackSplits{Splits: []messages.HeldSplit{{Split: "a", Epoch: 1}}, Reason: messages.EndReleased}},
			func(m any) bool {
				return m == messages.HandBackResolved{Split: "a", Epoch: 1, Reason: messages.EndReleased, Outcome: messages.HandBackFenced}
			}},
		{"completion without a record", []any{messages.TenancyEnded{Split: "a", Epoch: 1, Reason: messages.EndCompleted}},
			func(m any) bool {
				return m == messages.HandBackResolved{Split: "a", Epoch: 1, Reason: messages.EndCompleted, Outcome: messages.HandBackLanded}
			}},
		{"claim after Departing", []any{messages.Departing{}, recordmsg.ClaimSplit{Candidate: protocol.Candidate{ID: "b"}, RecordRev: 4}},
			func(m any) bool { return m == messages.ClaimAbandoned{Split: "b", Rev: 4} }},
		{"leftover return after Departing", []any{messages.Departing{}, recordmsg.ReturnLeftover{Split: "c", RecordRev: 5}},
			func(m any) bool { return m == messages.ClaimAbandoned{Split: "c", Rev: 5} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r, writer, _, sent := spawnLoneSplitWriter(t)
				for _, m := range tt.send {
					r.e.Send(writer, m)
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
func spawnLoneSplitWriter(t *testing.T) (r *rig, writer, rec *actor.PID, sent func() []any) {
	r = newRig(t)
	var mu sync.Mutex
	var msgs []any
	rec = r.e.Spawn(func() actor.Receiver { return workertest.Recorder{Mu: &mu, Msgs: &msgs} }, "rec")
	v := &worker.Env{Engine: r.e, Store: r.st, Config: workertest.Config(t, r.clk, "w1"), Clock: r.clk, ID: "w1", Log: workertest.DiscardLogger(), Outbox: &worker.Outbox{}}
	v.Ctx, v.Cancel = context.WithCancel(context.Background())
	v.PIDs = worker.PIDs{Root: rec, Lease: rec, Revoke: rec, Assign: rec}
	v.PIDs.SplitWriter = r.e.Spawn(newSplitWriter(v), "splitwriter")
	t.Cleanup(func() {
		<-r.e.Poison(v.PIDs.SplitWriter).Done()
		<-r.e.Poison(rec).Done()
	})
	return r, v.PIDs.SplitWriter, rec, func() []any {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(msgs)
	}
}
