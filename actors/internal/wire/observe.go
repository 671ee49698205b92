package wire

import (
	"github.com/spate-go/coordination"
)

// PresenceChanged is a change of one worker's presence key, as one watch
// event or listing shows it: a put, or its deletion or expiry (Deleted).
type PresenceChanged struct {
	// Instance is the worker whose presence key changed.
	Instance string
	// Nonce is the session the put announces; "" when Deleted.
	Nonce string
	// MaxInFlight is the budget the put advertises; 0 when the value was
	// unreadable or advertised 0 (use the leader's default), or Deleted.
	MaxInFlight uint32
	// Rev is the revision of the put or the deletion; 0 for a deletion a
	// snapshot or a listing implied.
	Rev uint64
	// Remaining are the member's remaining-work estimates of splits it
	// holds, the largest first (docs/protocol.md, "Runtime split"); nil
	// when it reported none, the value was unreadable, or Deleted.
	Remaining []Estimate
	// Deleted is true when the key was deleted or expired: the member
	// left.
	Deleted bool
	// Live is every live member with this change applied: the watch's
	// own, which a receiver keeps in place of the one before it (the
	// watch owns the live members; docs/architecture.md, "One owner per
	// fact").
	Live Members
}

// Estimate is a member's estimate of a held split's remaining work at its
// tenancy Epoch, in the split's weight units, as its presence carries it.
type Estimate struct {
	Split     coordination.SplitID
	Epoch     uint64
	Remaining uint64
}

// PresenceChallenged is a put of a challenge key: a process starting with
// InstanceID Instance found that instance's presence key held by another
// session and asks whether that session is live; the lease of a live
// session with this InstanceID answers by renewing its presence at once
// (docs/protocol.md, "Sessions", "Restart with the same id"). Challenger
// is the challenge key's value, the starting process's nonce; Rev is the
// key's revision.
type PresenceChallenged struct {
	Instance   string
	Challenger string
	Rev        uint64
}
