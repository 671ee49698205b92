package actors

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/messages"
)

// A Fail the root accepted while the commit actor had already lost the
// split's record (deleted outside the library; its drop was still on the
// way to the root) writes nothing and must say so: Fenced, never nil
// (§6.8).
func TestFailWithoutARecordIsFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		var mu sync.Mutex
		var msgs []any
		rec := r.e.Spawn(func() actor.Receiver { return recorder{mu: &mu, msgs: &msgs} }, "rec")
		v := &env{e: r.e, st: r.st, cfg: testConfig(t, r.clk, "w1"), clk: r.clk, id: "w1", log: discardLogger(), out: &outbox{}}
		v.ctx, v.cancel = context.WithCancel(context.Background())
		v.pid = pids{root: rec, lease: rec, revoke: rec, assign: rec}
		v.pid.commit = r.e.Spawn(newCommit(v), "commit")
		t.Cleanup(func() {
			<-r.e.Poison(v.pid.commit).Done()
			<-r.e.Poison(rec).Done()
		})
		r.e.Send(v.pid.commit, messages.FailSplit{Split: "a", Epoch: 1, Reason: "poison", ReplyTo: rec})
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
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
