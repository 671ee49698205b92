package actors

import (
	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/messages"
)

// subscribers are the user's actors that receive a copy of every event
// the root emits (messages.Subscribe), keyed by PID. Owner: the root.
type subscribers map[string]*actor.PID

// emit queues events for Poll and sends each subscriber a copy, in the
// same order. The root is the one emitter (docs/architecture.md): after a
// latched failure Poll hands out no further event, and nor does emit.
func (r *rootActor) emit(evs ...coordination.Event) {
	r.v.Outbox.Push(evs...)
	if len(r.subs) == 0 || r.v.Outbox.Failure() != nil {
		return
	}
	for _, ev := range evs {
		for _, pid := range r.subs {
			r.v.Reply(pid, ev)
		}
	}
}

// subscribe begins m's subscription, answering with the tenancies held now.
func (r *rootActor) subscribe(c *actor.Context, m messages.Subscribe) {
	to := replyTo(c, m.ReplyTo)
	if err := r.v.Outbox.Failure(); err != nil {
		r.v.Reply(to, messages.SubscribeReply{Err: err})
		return
	}
	held := []messages.Tenancy{}
	for _, id := range r.reg.splits() {
		e, _ := r.reg.epoch(id)
		held = append(held, messages.Tenancy{Split: id, Epoch: coordination.LeaseEpoch(e)})
	}
	r.subs[to.String()] = to
	r.v.Reply(to, messages.SubscribeReply{Held: held})
}

// unsubscribe ends m's subscription.
func (r *rootActor) unsubscribe(c *actor.Context, m messages.Unsubscribe) {
	to := replyTo(c, m.ReplyTo)
	delete(r.subs, to.String())
	r.v.Reply(to, messages.UnsubscribeReply{})
}
