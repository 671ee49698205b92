package actors

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/messages"
	"github.com/spate-go/coordination/store"
)

// TestAUsersActorCommandsTheCoordinatorByMessage: an actor of the user's,
// sending to Coordinator.PID, gets exactly one typed reply per command, at
// its ReplyTo when set and else at the sender: DeclineRevokeReply
// (forwarded through the root to the revoke actor), ReleaseSplitsReply
// (its Release hands the split back in the store) and FailSplitReply
// (Fenced, for the tenancy the Release ended).
func TestAUsersActorCommandsTheCoordinatorByMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", workertest.FinalPlan("a"))
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		epoch := w.held["a"].Epoch
		type reply struct {
			at string
			m  any
		}
		replies := make(chan reply, 4)
		inbox := r.e.SpawnFunc(func(c *actor.Context) {
			switch m := c.Message().(type) {
			case messages.DeclineRevokeReply, messages.ReleaseSplitsReply, messages.FailSplitReply:
				replies <- reply{"inbox", m}
			}
		}, "inbox")
		user := r.e.SpawnFunc(func(c *actor.Context) {
			switch m := c.Message().(type) {
			case messages.DeclineRevoke, messages.ReleaseSplits, messages.FailSplit:
				c.Send(w.c.PID(), m)
			case messages.DeclineRevokeReply, messages.ReleaseSplitsReply, messages.FailSplitReply:
				replies <- reply{"user", m}
			}
		}, "user")
		r.e.Send(user, messages.DeclineRevoke{Split: "a", Epoch: epoch})
		if got := <-replies; got != (reply{"user", messages.DeclineRevokeReply{Split: "a"}}) {
			t.Fatalf("DeclineRevoke answered %#v, want DeclineRevokeReply at the sender", got)
		}
		r.e.Send(user, messages.ReleaseSplits{Tenancies: []messages.Tenancy{{Split: "a", Epoch: epoch}}, ReplyTo: inbox})
		if got := <-replies; got.at != "inbox" || got.m != (messages.ReleaseSplitsReply{}) {
			t.Fatalf("ReleaseSplits answered %#v, want ReleaseSplitsReply at ReplyTo", got)
		}
		r.e.Send(user, messages.FailSplit{Split: "a", Epoch: epoch, Reason: "poison", ReplyTo: inbox})
		if got := <-replies; got.at != "inbox" || got.m.(messages.FailSplitReply).Split != "a" ||
			coordination.KindOf(got.m.(messages.FailSplitReply).Err) != coordination.Fenced {
			t.Fatalf("FailSplit of a released tenancy answered %#v, want a Fenced FailSplitReply at ReplyTo", got)
		}
		synctest.Wait()
		select {
		case got := <-replies:
			t.Fatalf("a command was answered twice: %#v", got)
		default:
		}
		settle()
		e, _, err := r.st.Get(context.Background(), store.Durable, protocol.SplitKey("a"))
		if err != nil {
			t.Fatal(err)
		}
		rec, err := protocol.DecodeSplit(e.Key, e.Value, protocol.Fingerprint("job:v1"))
		if err != nil || rec.Epoch <= uint64(epoch) {
			t.Fatalf("split record after the user's Release: %+v, %v; want a tenancy after %d (released, then claimed again: still assigned)", rec, err, epoch)
		}
		<-r.e.Poison(user).Done()
		<-r.e.Poison(inbox).Done()
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}
