package messages

import "github.com/anthdm/hollywood/actor"

// Subscribe asks the coordinator to send a copy of every event its Poll
// hands out (coordination.Gained, Lost, RevokeRequested, CutRequested,
// Quarantined, AllComplete, Stalled) to ReplyTo, or else to the sender,
// in the order Poll returns them, from the SubscribeReply on. The
// coordinator answers exactly one SubscribeReply first.
//
// A subscription observes; it does not consume: the driver (or whoever
// calls Poll) still receives every event and acts on it. Subscribing twice
// is one subscription. Events sent to an actor that stopped are dropped by
// the engine; Unsubscribe before stopping one.
type Subscribe struct {
	// ReplyTo receives the SubscribeReply and the events; nil sends them to
	// the sender.
	ReplyTo *actor.PID
}

// SubscribeReply answers Subscribe: the events after it follow the
// tenancies it lists.
type SubscribeReply struct {
	// Held are the tenancies the worker held when the subscription began,
	// in split order: their Gained came before it.
	Held []Tenancy
	// Err is nil when the subscription began; otherwise the coordinator's
	// failure, and no event follows.
	Err error
}

// Unsubscribe ends the subscription of ReplyTo (or the sender); no event
// is sent to it after the UnsubscribeReply. Ending a subscription that does
// not exist is no error.
type Unsubscribe struct {
	// ReplyTo is the subscriber, and receives the UnsubscribeReply; nil
	// means the sender.
	ReplyTo *actor.PID
}

// UnsubscribeReply answers Unsubscribe.
type UnsubscribeReply struct {
	// Err is always nil: ending a subscription cannot fail.
	Err error
}
