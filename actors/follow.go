package actors

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
)

// The root tells the revoke actor which held tenancies to follow
// (docs/protocol.md, "Following the assignment"): the rules read the held
// tenancies, whose owner is the root's registry, with the assigned set
// (assign's AssignedSetChanged) and the job's phase (the watch's
// WatchesChanged, the root's own verdict and Depart), so the root applies
// the registry to them and tells revoke, in one FollowAssignment, exactly
// the tenancies to act on, each with whether the assignment names it. The
// revoke actor keeps only its drains in progress.

// assignedSetChanged takes assign's diff and tells revoke every held
// tenancy to follow. assign tells the root before the split writer, so a
// tenancy the split writer starts from this set reaches the root after it.
func (r *rootActor) assignedSetChanged(m wire.AssignedSetChanged) {
	r.decided = m.Decided
	r.assigned = make(map[coordination.SplitID]bool, len(m.Splits))
	for _, id := range m.Splits {
		r.assigned[id] = true
	}
	r.followAll()
}

// following reports whether the revocation rules apply now: an assignment
// record is known, both watches are live, and the job is neither decided
// nor departing.
func (r *rootActor) following() bool {
	return r.decided && r.live && !r.verdict && !r.departing
}

// followAll tells revoke every held tenancy to follow (none while the
// rules do not apply: revoke still checks its deadlines).
func (r *rootActor) followAll() {
	var ts []wire.FollowedTenancy
	if r.following() {
		for _, id := range r.reg.splits() {
			e, _ := r.reg.epoch(id)
			ts = append(ts, wire.FollowedTenancy{Split: id, Epoch: e, Assigned: r.assigned[id]})
		}
	}
	r.v.Tell(wire.FollowAssignment{Tenancies: ts}, r.v.PIDs.Revoke)
}

// follow tells revoke the tenancy of id that just started to follow.
func (r *rootActor) follow(id coordination.SplitID) {
	var ts []wire.FollowedTenancy
	if e, ok := r.reg.epoch(id); ok && r.following() {
		ts = []wire.FollowedTenancy{{Split: id, Epoch: e, Assigned: r.assigned[id]}}
	}
	r.v.Tell(wire.FollowAssignment{Tenancies: ts}, r.v.PIDs.Revoke)
}
