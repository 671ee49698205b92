package actors

import (
	"maps"
	"slices"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
)

// registry is the root's tenancy registry, the one owner of the fact
// "this worker holds split s at epoch e". A tenancy starts when a claim's
// ClaimWon reaches the root and ends only through the root (an EndTenancy
// asked by the split-writer actor or the handle, a handle command, a forced
// revocation, the session's end); the root announces each change as
// TenancyStarted and TenancyEnded, from which the other actors keep
// derived views (heldView).
type registry struct {
	held      map[coordination.SplitID]worker.Tenancy
	lastEpoch map[coordination.SplitID]uint64 // highest epoch ever started (E2)
}

func newRegistry() registry {
	return registry{held: map[coordination.SplitID]worker.Tenancy{}, lastEpoch: map[coordination.SplitID]uint64{}}
}

// holds reports whether tenancy (id, epoch) is held. It is the one place a
// stale end or request (of an earlier tenancy of the split) is filtered by
// epoch.
func (g *registry) holds(id coordination.SplitID, epoch uint64) bool {
	t, ok := g.held[id]
	return ok && t.Epoch == epoch
}

// epoch returns the held tenancy's epoch of id.
func (g *registry) epoch(id coordination.SplitID) (uint64, bool) {
	t, ok := g.held[id]
	return t.Epoch, ok
}

// start registers tenancy t of id; it reports false (and registers
// nothing) when id is held already or t is not newer than every tenancy
// started before.
func (g *registry) start(id coordination.SplitID, t worker.Tenancy) bool {
	if _, ok := g.held[id]; ok || t.Epoch <= g.lastEpoch[id] {
		return false
	}
	g.held[id], g.lastEpoch[id] = t, t.Epoch
	return true
}

// end removes id's tenancy.
func (g *registry) end(id coordination.SplitID) { delete(g.held, id) }

// len returns the number of held tenancies.
func (g *registry) len() int { return len(g.held) }

// splits returns the held splits in order.
func (g *registry) splits() []coordination.SplitID { return slices.Sorted(maps.Keys(g.held)) }
