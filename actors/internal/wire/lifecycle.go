package wire

import (
	"github.com/spate-go/coordination"
)

// Job is the job a worker was started on: the planner Start was called
// with, its fingerprint and the hash of that fingerprint
// (protocol.Fingerprint). The handle sets it once, at Start.
type Job struct {
	Planner     coordination.Planner
	Fingerprint string
	FP          uint64
}

// StartJob is the handle's Start, sent to the lease actor, which joins the
// job (docs/protocol.md, "Joining") and tells the others the job with the
// session's start (SessionChanged).
type StartJob struct {
	Job Job
}

// SessionChanged reports a change of this worker's session
// (docs/protocol.md, "Sessions"); the lease actor, the session's owner,
// sends it. Live false: the session ended: every held split is dropped,
// claims pause, a leader steps down. Live true: a session started: the
// first once startup joined the job and the presence key exists (the
// watches open; its nonce is Env.Nonce), or a new one announced after one
// ended; claims resume.
type SessionChanged struct {
	// Live is true when a session started, false when the session ended.
	Live bool
	// Nonce is the started session's nonce when Live; "" when not.
	Nonce string
	// Job is the job the session is a member of, set when Live: the
	// receivers act on nothing of the job before this worker joined it.
	Job Job
	// Planned is, at the first session's start, the plan record's planned
	// count (a lower bound on the number of split records) when this worker
	// joined; 0 when it created the plan record, and at any later start. A
	// size hint only (worker.SizeHint bounds it): the receivers size their
	// views of the split records before the snapshot fills them.
	Planned uint64
}

// WatchesChanged reports whether both watches are live (each has delivered
// its SnapshotDone and not broken since).
type WatchesChanged struct {
	Live bool
}

// HealthChanged tells the root what Healthy reports, as the split writer's
// claim gate sees it: Session once this worker joined and while its session
// holds (from each SessionChanged that is Live until one that is not), Watches while both watches are live. The split writer
// sends it on each change; the root publishes it in the outbox
// (Outbox.SetLive).
type HealthChanged struct {
	Session, Watches bool
}

// Reconciled reports that a reconcile listing was applied.
type Reconciled struct{}

// HeartbeatTicked is the lease actor's heartbeat, fanned out to the actors
// that act at every heartbeat.
type HeartbeatTicked struct {
	Round uint64
}

// HeartbeatDue is the lease actor's heartbeat timer tick.
type HeartbeatDue struct {
	Round uint64
}

// Departing tells the lease actor that Depart was called: it never renews
// or writes the presence key again but to delete it (WithdrawPresence).
type Departing struct{}

// Retire asks the leader actor to stop working as leader (no election,
// planning, publishing or cuts) and to keep the leader key until StepDown
// or its expiry: the root sends it when it emitted the job's verdict and
// when Depart began.
type Retire struct{}
