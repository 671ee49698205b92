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

// HeldSplit names a split and its tenancy epoch.
type HeldSplit struct {
	Split coordination.SplitID
	Epoch uint64
}

// SurrenderTenancies tells the split-writer actor that the root ended the
// listed tenancies for Reason (their TenancyEnded went to revoke first),
// and asks in the same message for the write each end calls for: the
// completion of the split record (EndCompleted), the failure (EndFailed,
// Failure its reason, answered messages.FailSplitReply to ReplyTo), a
// hand-back (EndReleased, EndDrained, EndRevoked, EndDeparted; answered
// once for the batch to ReplyTo, messages.ReleaseSplitsReply or, for
// EndDeparted, SurrenderTenanciesReply), none for a fence or a session's
// end. With Leftovers (Depart) it also returns every split record the view
// shows naming this session that the worker does not hold, before it
// replies.
type SurrenderTenancies struct {
	Tenancies []HeldSplit
	Reason    EndReason
	Failure   string
	ReplyTo   *actor.PID
	Leftovers bool
}

// SurrenderTenanciesReply answers a Depart's SurrenderTenancies: the splits
// whose hand-back did not confirm.
type SurrenderTenanciesReply struct {
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
