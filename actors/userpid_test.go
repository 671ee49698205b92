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
// sending to Coordinator.PID, gets DeclineRevokeReply (forwarded through
// the root to the revoke actor) and ReleaseSplitsReply, and its Release
// hands the split back in the store.
func TestAUsersActorCommandsTheCoordinatorByMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", workertest.FinalPlan("a"))
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		epoch := uint64(w.held["a"].Epoch)
		replies := make(chan any, 2)
		user := r.e.SpawnFunc(func(c *actor.Context) {
			switch m := c.Message().(type) {
			case messages.DeclineRevoke, messages.ReleaseSplits:
				c.Send(w.c.PID(), m)
			case messages.DeclineRevokeReply, messages.ReleaseSplitsReply:
				replies <- m
			}
		}, "user")
		r.e.Send(user, messages.DeclineRevoke{Split: "a", Epoch: epoch})
		if got := <-replies; got != (messages.DeclineRevokeReply{}) {
			t.Fatalf("DeclineRevoke answered %#v", got)
		}
		r.e.Send(user, messages.ReleaseSplits{Splits: []coordination.SplitID{"a"}, Epochs: []uint64{epoch}})
		if got, ok := (<-replies).(messages.ReleaseSplitsReply); !ok || got.Err != nil {
			t.Fatalf("ReleaseSplits answered %#v", got)
		}
		settle()
		e, _, err := r.st.Get(context.Background(), store.Durable, protocol.SplitKey("a"))
		if err != nil {
			t.Fatal(err)
		}
		rec, err := protocol.DecodeSplit(e.Key, e.Value, protocol.Fingerprint("job:v1"))
		if err != nil || rec.Epoch <= epoch {
			t.Fatalf("split record after the user's Release: %+v, %v; want a tenancy after %d (released, then claimed again: still assigned)", rec, err, epoch)
		}
		<-r.e.Poison(user).Done()
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}
