package actors

import (
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/messages"
)

// TestAUsersActorSubscribesToTheEvents: a subscribed actor of the user's
// is told the tenancies held when it subscribed, then receives a copy of
// exactly the events Poll hands out, in Poll's order, and nothing after it
// unsubscribed.
func TestAUsersActorSubscribesToTheEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", workertest.FinalPlan("a", "b"))
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 2 })
		got := make(chan any, 16)
		user := r.e.SpawnFunc(func(c *actor.Context) {
			switch m := c.Message().(type) {
			case messages.Subscribe, messages.Unsubscribe, messages.ReleaseSplits:
				c.Send(w.c.PID(), m)
			case actor.Initialized, actor.Started, actor.Stopped:
			default:
				got <- m
			}
		}, "user")

		r.e.Send(user, messages.Subscribe{})
		want := messages.SubscribeReply{Held: []messages.Tenancy{{Split: "a", Epoch: w.held["a"].Epoch}, {Split: "b", Epoch: w.held["b"].Epoch}}}
		if reply := <-got; !reflect.DeepEqual(reply, want) {
			t.Fatalf("Subscribe answered %#v, want %#v", reply, want)
		}
		// Release a: still assigned, the worker claims it again (a Gained).
		w.pump(t)
		polled := len(w.evs)
		first := w.held["a"].Epoch
		r.e.Send(user, messages.ReleaseSplits{Tenancies: []messages.Tenancy{{Split: "a", Epoch: first}}})
		r.until("a gained again", 10*time.Second, []*member{w}, func() bool { return w.held["a"].Epoch > first })
		settle()
		var copies []any
		for len(got) > 0 {
			if m := <-got; m != (messages.ReleaseSplitsReply{}) {
				copies = append(copies, m)
			}
		}
		var events []any
		for _, ev := range w.evs[polled:] {
			events = append(events, ev)
		}
		if len(events) == 0 || !reflect.DeepEqual(copies, events) {
			t.Fatalf("the subscriber received %#v; Poll handed out %#v", copies, events)
		}

		r.e.Send(user, messages.Unsubscribe{})
		if reply := <-got; reply != (messages.UnsubscribeReply{}) {
			t.Fatalf("Unsubscribe answered %#v", reply)
		}
		second := w.held["a"].Epoch
		r.e.Send(user, messages.ReleaseSplits{Tenancies: []messages.Tenancy{{Split: "a", Epoch: second}}})
		r.until("a gained a third time", 10*time.Second, []*member{w}, func() bool { return w.held["a"].Epoch > second })
		settle()
		for len(got) > 0 {
			if m := <-got; m != (messages.ReleaseSplitsReply{}) {
				t.Fatalf("after Unsubscribe the subscriber received %#v", m)
			}
		}
		<-r.e.Poison(user).Done()
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}
