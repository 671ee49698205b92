package splitwriter

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
)

// The split writer tells the revoke actor which held tenancies to follow
// (docs/protocol.md, "Following the assignment"): the rules read the held
// tenancies, whose owner is the split writer's registry (tenancy.go), with
// the assigned set (the claimer's, applied from the assignment record)
// and the job's phase (the watch's WatchesChanged, the split writer's own
// verdict and Depart), so it applies the registry to them and tells
// revoke, in one FollowAssignment, exactly the tenancies to act on, each
// with whether the assignment names it. The revoke actor keeps only its
// drains in progress.

// following reports whether the revocation rules apply now: an assignment
// record is known, both watches are live, and the job is neither decided
// nor departing.
func (sw *splitWriterActor) following() bool {
	return sw.claims.decided && sw.claims.live && !sw.verdict && !sw.departing
}

// followAll tells revoke every held tenancy to follow (none while the
// rules do not apply: revoke still checks its deadlines).
func (sw *splitWriterActor) followAll() {
	var ts []wire.FollowedTenancy
	if sw.following() {
		for _, h := range sw.reg.list() {
			ts = append(ts, wire.FollowedTenancy{Split: h.Split, Epoch: h.Epoch, Assigned: sw.claims.assigned[h.Split]})
		}
	}
	sw.v.Tell(wire.FollowAssignment{Tenancies: ts}, sw.v.PIDs.Revoke)
}

// follow tells revoke the tenancy of id that just started to follow.
func (sw *splitWriterActor) follow(id coordination.SplitID) {
	var ts []wire.FollowedTenancy
	if e, ok := sw.reg.epoch(id); ok && sw.following() {
		ts = []wire.FollowedTenancy{{Split: id, Epoch: e, Assigned: sw.claims.assigned[id]}}
	}
	sw.v.Tell(wire.FollowAssignment{Tenancies: ts}, sw.v.PIDs.Revoke)
}
