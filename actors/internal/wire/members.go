package wire

import (
	"iter"
	"maps"
)

// Member is one live member of the fleet as its presence record carries
// it.
type Member struct {
	// Nonce is the session the member's presence names.
	Nonce string
	// MaxInFlight is the lane budget it advertises; 0 when it advertised
	// 0 or its value was unreadable (the leader's own applies).
	MaxInFlight uint32
}

// LiveMembers maps each live member of the fleet to its presence, as the
// watch observes the presence keys. Its owner is the watch actor
// (actors/watch), the only one that writes it: it applies each put and
// deletion and sends the result, a Members snapshot, with the change
// (PresenceChanged.Live).
type LiveMembers map[string]Member

// Members is a snapshot of the watch's LiveMembers, read-only: a receiver
// keeps the last one it was sent, as it was sent, and never derives one of
// its own (docs/architecture.md, "One owner per fact"). The zero Members
// has no member.
type Members struct{ m map[string]Member }

// SnapshotMembers returns a snapshot of live, which the owner may then
// change without changing the snapshot. Only the watch calls it
// (actors/owners_test.go checks).
func SnapshotMembers(live LiveMembers) Members { return Members{m: maps.Clone(live)} }

// Get returns member inst, and whether it is live.
func (ms Members) Get(inst string) (Member, bool) {
	m, ok := ms.m[inst]
	return m, ok
}

// Has reports whether inst is a live member.
func (ms Members) Has(inst string) bool {
	_, ok := ms.m[inst]
	return ok
}

// Len is the number of live members.
func (ms Members) Len() int { return len(ms.m) }

// All yields each live member and its presence, in no order.
func (ms Members) All() iter.Seq2[string, Member] { return maps.All(ms.m) }
