package wire

import (
	"github.com/spate-go/coordination"
)

// JobStarted tells every actor that Start was called: the planner, its
// fingerprint and the hash of that fingerprint.
type JobStarted struct {
	Planner     coordination.Planner
	Fingerprint string
	FP          uint64
}

// Joined reports that the startup phases finished and the presence key
// exists. The lease actor sends it to the watch actor, so that the watches
// open, and to the leader and split-writer actors, so that they size their
// views of the split records before the snapshot fills them.
type Joined struct {
	// Planned is the plan record's planned count (a lower bound on the
	// number of split records) when this worker joined; 0 when it created
	// the plan record. A size hint only (worker.SizeHint bounds it).
	Planned uint64
}

// SessionChanged reports a change of this worker's session
// (docs/protocol.md, "Sessions"); the lease actor, the session's owner,
// sends it. Live false: the session ended: every held split is dropped,
// claims pause, a leader steps down. Live true: a new session (Nonce)
// announced its presence after one ended; claims resume. The first
// session is not reported here: Joined reports it, and its nonce is
// Env.Nonce.
type SessionChanged struct {
	// Live is true when a new session started, false when the session
	// ended.
	Live bool
	// Nonce is the new session's nonce when Live; "" when not.
	Nonce string
}

// WatchesChanged reports whether both watches are live (each has delivered
// its SnapshotDone and not broken since).
type WatchesChanged struct {
	Live bool
}

// HealthChanged tells the root what Healthy reports, as the split writer's
// claim gate sees it: Session once this worker joined and while its session
// holds (from Joined, and from each SessionChanged that is Live, until one
// that is not), Watches while both watches are live. The split writer
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

// VerdictReached reports the job's verdict; Stalled is false for AllComplete.
type VerdictReached struct {
	Stalled     bool
	Completed   uint64
	Quarantined uint64
}

// Departing tells the actors that Depart was called: stop claiming,
// electing, publishing and renewing presence.
type Departing struct{}
