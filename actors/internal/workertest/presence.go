package workertest

import "github.com/spate-go/coordination/actors/internal/wire"

// Presence plays the watch, the live members' owner, for a test: it
// returns the snapshot after member inst's presence changed from prev, to m
// when live, or gone.
func Presence(prev wire.Members, inst string, m wire.Member, live bool) wire.Members {
	members := wire.LiveMembers{}
	for i, p := range prev.All() {
		members[i] = p
	}
	if live {
		members[inst] = m
	} else {
		delete(members, inst)
	}
	return wire.SnapshotMembers(prev, members, inst)
}
