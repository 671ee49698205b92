package wire

import (
	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
)

// StartJob is the handle's Start, sent to the root.
type StartJob struct {
	Planner     coordination.Planner
	Fingerprint string
}

// RecordFailure asks the split-writer actor to record a failure the root
// accepted (a FailSplit whose tenancy it ended); the split writer answers
// messages.FailSplitReply to ReplyTo once the write resolved.
type RecordFailure struct {
	Split   coordination.SplitID
	Epoch   uint64
	Reason  string
	ReplyTo *actor.PID
}

// HeldSplit names a split and its tenancy epoch.
type HeldSplit struct {
	Split coordination.SplitID
	Epoch uint64
}

// HandBackSplits asks the split-writer actor to clear the owner of surrendered
// splits; the reply goes to ReplyTo. With Leftovers (Depart) it also
// returns every split record the view shows naming this session that the
// worker does not hold, before it replies.
type HandBackSplits struct {
	Splits    []HeldSplit
	Reason    EndReason
	ReplyTo   *actor.PID
	Leftovers bool
}

// HandBackSplitsReply answers HandBackSplits: the splits whose hand-back
// did not confirm.
type HandBackSplitsReply struct {
	Unconfirmed []coordination.SplitID
	Err         error
}

// DepartJob is a handle Depart.
type DepartJob struct {
	Held []coordination.SplitID
}

// DepartJobReply answers DepartJob. When the coordinator had failed,
// Failed is set, Held lists the named splits with their held epochs and
// Session is this worker's session nonce, for the direct hand-back.
type DepartJobReply struct {
	Err    error
	Failed bool
	Held   []HeldSplit
	// Session is the nonce of the session the root last heard of
	// (SessionStarted), set with Failed: the direct hand-back writes only
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
