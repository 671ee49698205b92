package assign

import (
	"fmt"
	"log/slog"
	"slices"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/recordmsg"
)

// assignActor diffs this worker's assignment (docs/protocol.md, "Following
// the assignment"): it follows its own assignment record, newest
// generation first, and computes in one place what the record newly names
// here and what it no longer names, as franz-go's group consumer computes
// (added, lost) in diffAssigned. It tells the diff (AssignedSetChanged) to
// the split-writer actor, which claims what was added, returns leftovers
// no longer named and tells the revoke actor the held tenancies to drain
// (actors/splitwriter/follow.go). It posts each cut request the record carries (CutAsked) to
// the commit writer.
type assignActor struct {
	v   *worker.Env
	log *slog.Logger

	appliedGen uint64
	assigned   worker.AssignedSet // the last record's set, empty while none is known
}

// New returns the producer of worker v's assignment-diffing actor.
func New(v *worker.Env) actor.Producer {
	return func() actor.Receiver {
		return &assignActor{
			v:        v,
			log:      v.Log.With("actor", "assign"),
			assigned: worker.AssignedSet{},
		}
	}
}

// tell sends the diff to the split writer, which claims by it and tells
// the revoke actor the held tenancies to follow.
func (a *assignActor) tell(m wire.AssignedSetChanged) {
	a.v.Tell(m, a.v.PIDs.SplitWriter)
}

// Receive handles one message.
func (a *assignActor) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized, actor.Started, actor.Stopped:
	case recordmsg.AssignmentChanged: // from the watch: this worker's own
		if m.Deleted {
			a.unassigned()
			return
		}
		a.assignment(m)
	default:
		a.log.Warn("unknown message", "type", fmt.Sprintf("%T", m))
	}
}

// unassigned applies the deletion of this worker's assignment record:
// nothing is decided until a new one appears.
func (a *assignActor) unassigned() {
	a.assigned = worker.AssignedSet{}
	a.tell(wire.AssignedSetChanged{})
}

// assignment applies this worker's assignment record unless an applied one
// is of a newer generation, and tells the diff.
func (a *assignActor) assignment(m recordmsg.AssignmentChanged) {
	if m.Assignment.Generation < a.appliedGen {
		return
	}
	a.appliedGen = m.Assignment.Generation
	set, added, removed := diffAssigned(a.assigned, m.Assignment.Splits)
	a.assigned = set
	a.tell(wire.AssignedSetChanged{
		Decided: true,
		Splits:  slices.Clone(m.Assignment.Splits),
		Added:   added,
		Removed: removed,
	})
	// The leader's cut requests ride on the record (docs/protocol.md,
	// "Runtime split", "Who decides"): each goes to the commit writer, which
	// knows the tenancy's durable record and hands it to the driver at most
	// once.
	for _, r := range m.Assignment.Cuts {
		a.v.PostCommit(worker.CutAsked{Split: r.Split, Epoch: coordination.LeaseEpoch(r.Epoch), Counter: r.Counter, KeepPPM: r.KeepPPM, Parts: r.Parts})
	}
}

// diffAssigned is the one place the assignment is diffed: the set next
// names, what it names that old does not (added, in next's order) and what
// old names that it does not (removed, sorted).
func diffAssigned(old worker.AssignedSet, next []coordination.SplitID) (set worker.AssignedSet, added, removed []coordination.SplitID) {
	set = make(worker.AssignedSet, len(next))
	for _, id := range next {
		set[id] = true
		if !old[id] {
			added = append(added, id)
		}
	}
	for id := range old {
		if !set[id] {
			removed = append(removed, id)
		}
	}
	slices.Sort(removed)
	return set, added, removed
}
