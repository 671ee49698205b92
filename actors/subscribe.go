package actors

import (
	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/messages"
)

// subscribers are the user's actors that receive a copy of every event
// the root emits (messages.Subscribe). Owner: the root.
type subscribers struct {
	active map[string]*actor.PID // copied on every event, keyed by PID
	// waiting holds, per user's actor whose Subscribe awaits the split
	// writer's list of the held tenancies, its later Subscribe and
	// Unsubscribe commands in arrival order: they are applied after it, so
	// each actor's commands take effect and are answered in the order sent.
	waiting map[string][]any
}

func newSubscribers() subscribers {
	return subscribers{active: map[string]*actor.PID{}, waiting: map[string][]any{}}
}

// subscribe begins m's subscription: the split writer, the owner of the
// held tenancies, lists them (BeginSubscription), and the root answers
// with that list and copies every event from there on.
func (r *rootActor) subscribe(c *actor.Context, m messages.Subscribe) {
	m.ReplyTo = replyTo(c, m.ReplyTo)
	key := m.ReplyTo.String()
	if q, ok := r.subs.waiting[key]; ok {
		r.subs.waiting[key] = append(q, m)
		return
	}
	if err := r.v.Failure(); err != nil {
		r.v.Reply(m.ReplyTo, messages.SubscribeReply{Err: err})
		return
	}
	r.subs.waiting[key] = nil
	r.v.Tell(m, r.v.PIDs.SplitWriter)
}

// beginSubscription answers a Subscribe with the held tenancies the split
// writer listed and adds its actor to the subscribers, then applies the
// actor's commands that waited for it.
func (r *rootActor) beginSubscription(m wire.BeginSubscription) {
	key := m.ReplyTo.String()
	if err := r.v.Failure(); err != nil {
		r.v.Reply(m.ReplyTo, messages.SubscribeReply{Err: err})
	} else {
		held := make([]messages.Tenancy, 0, len(m.Held))
		for _, h := range m.Held {
			held = append(held, messages.Tenancy{Split: h.Split, Epoch: coordination.LeaseEpoch(h.Epoch)})
		}
		r.subs.active[key] = m.ReplyTo
		r.v.Reply(m.ReplyTo, messages.SubscribeReply{Held: held})
	}
	q := r.subs.waiting[key]
	delete(r.subs.waiting, key)
	for i, cmd := range q {
		if rest, ok := r.subs.waiting[key]; ok { // a Subscribe of q waits again
			r.subs.waiting[key] = append(rest, q[i:]...)
			return
		}
		switch cmd := cmd.(type) {
		case messages.Subscribe:
			r.subscribe(nil, cmd)
		case messages.Unsubscribe:
			r.unsubscribe(nil, cmd)
		}
	}
}

// unsubscribe ends m's subscription.
func (r *rootActor) unsubscribe(c *actor.Context, m messages.Unsubscribe) {
	m.ReplyTo = replyTo(c, m.ReplyTo)
	key := m.ReplyTo.String()
	if q, ok := r.subs.waiting[key]; ok {
		r.subs.waiting[key] = append(q, m)
		return
	}
	delete(r.subs.active, key)
	r.v.Reply(m.ReplyTo, messages.UnsubscribeReply{})
}
