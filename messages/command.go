package messages

import (
	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
)

// FailSplit fails a held tenancy, as Coordinator.Fail does: the split is
// reported failed (quarantined after MaxAttempts) and the tenancy ends. The
// coordinator answers exactly one FailSplitReply.
type FailSplit struct {
	// Split is the failed split.
	Split coordination.SplitID
	// Epoch is the tenancy's epoch, as its Gained carried it; a tenancy that
	// is no longer held is left alone and the reply's Err is Fenced.
	Epoch coordination.LeaseEpoch
	// Reason is logged with the failure; it is not stored.
	Reason string
	// ReplyTo receives the FailSplitReply; nil sends it to the sender.
	ReplyTo *actor.PID
}

// FailSplitReply answers FailSplit once its write resolved (or it was
// refused).
type FailSplitReply struct {
	// Split is the command's Split.
	Split coordination.SplitID
	// Err is nil when the failure was recorded; otherwise it says why not
	// (Fenced for a tenancy no longer held, the coordinator's failure, or an
	// unconfirmed write).
	Err error
}

// Tenancy names one tenancy: a split and the epoch its Gained carried.
type Tenancy struct {
	// Split is the held split.
	Split coordination.SplitID
	// Epoch is the tenancy's epoch.
	Epoch coordination.LeaseEpoch
}

// ReleaseSplits hands tenancies back, as Coordinator.Release (Drained
// false) or ReleaseDrained (Drained true) do. Tenancies no longer held are
// skipped. The coordinator answers exactly one ReleaseSplitsReply.
type ReleaseSplits struct {
	// Tenancies are the tenancies handed back.
	Tenancies []Tenancy
	// Drained says the splits' sources are drained for now (ReleaseDrained):
	// peers wait before claiming them again.
	Drained bool
	// ReplyTo receives the ReleaseSplitsReply; nil sends it to the sender.
	ReplyTo *actor.PID
}

// ReleaseSplitsReply answers ReleaseSplits once every hand-back write
// resolved.
type ReleaseSplitsReply struct {
	// Err is nil when every held tenancy was handed back; otherwise it names
	// the splits whose hand-back did not confirm, or the coordinator's
	// failure.
	Err error
}

// DeclineRevoke refuses the revocation of a held tenancy, as
// Coordinator.DeclineRevoke does. The coordinator answers exactly one
// DeclineRevokeReply.
type DeclineRevoke struct {
	// Split is the split whose revocation is declined.
	Split coordination.SplitID
	// Epoch is the tenancy's epoch; a tenancy no longer held is left alone
	// and the reply's Err is Fenced.
	Epoch coordination.LeaseEpoch
	// ReplyTo receives the DeclineRevokeReply; nil sends it to the sender.
	ReplyTo *actor.PID
}

// DeclineRevokeReply answers DeclineRevoke once the tenancy is surrendered
// (its Lost is queued); the hand-back is written after.
type DeclineRevokeReply struct {
	// Split is the command's Split.
	Split coordination.SplitID
	// Err is nil when the decline was taken (or no revocation was pending);
	// otherwise it says why not.
	Err error
}
