package actors

import (
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
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

// A Subscribe waits for the split writer's list of the held tenancies
// (BeginSubscription); the same actor's Unsubscribe sent meanwhile waits
// for it too, so the two are answered in the order sent and the actor,
// unsubscribed last, receives no event after.
func TestAnUnsubscribeWaitsForTheSubscribeBeforeIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rig := newRootRig(t)
		var toSW, toUser []any
		rig.v.PIDs.SplitWriter = rig.record(t, "splitwriter", &toSW)
		user := rig.record(t, "user", &toUser)
		rig.start(t)
		e, v, mu := rig.e, rig.v, &rig.mu
		e.Send(v.PIDs.Root, messages.Subscribe{ReplyTo: user})
		e.Send(v.PIDs.Root, messages.Unsubscribe{ReplyTo: user})
		synctest.Wait()
		mu.Lock()
		if len(toUser) != 0 || len(toSW) != 1 || toSW[0] != any(messages.Subscribe{ReplyTo: user}) {
			t.Fatalf("before the list: user told %v, split writer %v; want nothing, and the Subscribe sent on", toUser, toSW)
		}
		mu.Unlock()
		e.Send(v.PIDs.Root, wire.BeginSubscription{ReplyTo: user, Held: []wire.HeldSplit{{Split: "a", Epoch: 2}}})
		e.Send(v.PIDs.Root, wire.EventsRaised{Events: []coordination.Event{coordination.Gained{Split: coordination.SplitSpec{ID: "b"}, Epoch: 1}}})
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		want := []any{messages.SubscribeReply{Held: []messages.Tenancy{{Split: "a", Epoch: 2}}}, messages.UnsubscribeReply{}}
		if !reflect.DeepEqual(toUser, want) {
			t.Fatalf("user told %#v, want %#v (no Gained after the Unsubscribe)", toUser, want)
		}
	})
}
