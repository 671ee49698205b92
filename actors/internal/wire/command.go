package wire

import (
	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
)

// HeldSplit names a split and its tenancy epoch.
type HeldSplit struct {
	Split coordination.SplitID
	Epoch uint64
}

// DepartHandedBack answers a Depart the root sent on to the split
// writer (DepartJob): the splits whose hand-back did not confirm.
type DepartHandedBack struct {
	Unconfirmed []coordination.SplitID
	Err         error
}

// DepartJob is a handle Depart, sent to the root, which sends it on to the
// split writer (the owner of the held tenancies) with ReplyTo and Failure
// set: the split writer hands back every held tenancy and this worker's
// leftovers and answers DepartHandedBack to ReplyTo (the root); when
// the coordinator had failed (Failure) it writes nothing and answers
// DepartJobReply to ReplyTo (the handle) for the direct hand-back.
type DepartJob struct {
	Held    []coordination.SplitID // the splits the driver names (the handle)
	ReplyTo *actor.PID             // where the split writer answers (the root)
	Failure error                  // the latched failure, or nil (the root)
}

// BeginSubscription is the split writer's answer to a user's actor's
// messages.Subscribe, which the root sent on to it: the tenancies held as
// it answered, in split order. The root begins copying events to ReplyTo
// from here on, after answering it messages.SubscribeReply{Held}: every
// start and end the split writer applied before reached the root first.
type BeginSubscription struct {
	ReplyTo *actor.PID
	Held    []HeldSplit
}

// DepartJobReply answers DepartJob. When the coordinator had failed,
// Failed is set, Held lists the named splits with their held epochs and
// Session is this worker's session nonce, for the direct hand-back.
type DepartJobReply struct {
	Err    error
	Failed bool
	Held   []HeldSplit
	// Session is the nonce of the session the split writer last heard of
	// (SessionChanged), set with Failed: the direct hand-back writes only
	// records and a leader key of that session.
	Session string
}

// StepDown asks the leader actor to demote (Depart); it answers
// StepDownReply to ReplyTo.
type StepDown struct{ ReplyTo *actor.PID }

// StepDownReply answers StepDown.
type StepDownReply struct{}

// WithdrawPresence asks the lease actor to delete the presence key (Depart).
type WithdrawPresence struct{ ReplyTo *actor.PID }

// WithdrawPresenceReply answers WithdrawPresence.
type WithdrawPresenceReply struct{}
