package wire

import (
	"iter"
	"maps"
	"math"
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
//
// A snapshot is a base, shared with the snapshots before it, and the
// members changed since (recent), at most about the square root of the
// members: a change copies only recent, and once recent is full the next
// snapshot copies every member into a new base. So a flood of n presence
// keys a peer writes costs the watch O(n√n), not O(n²): 10,000 of them
// took 2.5 s of copying with a full copy per change.
type Members struct {
	base   map[string]Member      // never written once built
	recent map[string]recentEntry // never written once built; overrides base
	n      int                    // live members
}

// recentEntry is a member changed since a snapshot's base: its presence,
// or that it left.
type recentEntry struct {
	m    Member
	live bool
}

// SnapshotMembers returns the snapshot of live, the owner's map, after
// member inst changed in it; prev is the snapshot before the change. Only
// the watch calls it (actors/owners_test.go checks).
func SnapshotMembers(prev Members, live LiveMembers, inst string) Members {
	if len(prev.recent) >= recentLimit(len(live)) {
		return Members{base: maps.Clone(live), n: len(live)}
	}
	recent := make(map[string]recentEntry, len(prev.recent)+1)
	maps.Copy(recent, prev.recent)
	m, ok := live[inst]
	recent[inst] = recentEntry{m: m, live: ok}
	return Members{base: prev.base, recent: recent, n: len(live)}
}

// recentLimit is how many changed members a snapshot of n live members
// keeps beside its base: about √n, and at least 8.
func recentLimit(n int) int { return max(8, int(math.Sqrt(float64(n)))) }

// Get returns member inst, and whether it is live.
func (ms Members) Get(inst string) (Member, bool) {
	if e, ok := ms.recent[inst]; ok {
		return e.m, e.live
	}
	m, ok := ms.base[inst]
	return m, ok
}

// Has reports whether inst is a live member.
func (ms Members) Has(inst string) bool {
	_, ok := ms.Get(inst)
	return ok
}

// Len is the number of live members.
func (ms Members) Len() int { return ms.n }

// All yields each live member and its presence, in no order.
func (ms Members) All() iter.Seq2[string, Member] {
	return func(yield func(string, Member) bool) {
		for inst, e := range ms.recent {
			if e.live && !yield(inst, e.m) {
				return
			}
		}
		for inst, m := range ms.base {
			if _, changed := ms.recent[inst]; !changed && !yield(inst, m) {
				return
			}
		}
	}
}
