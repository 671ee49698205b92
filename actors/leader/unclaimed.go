package leader

import (
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

// The leader's side of the unclaimed rule (docs/protocol.md, "Members that
// do not claim"; the rule is protocol.ClaimWatch): while working as leader,
// the view keeps each live member session's standing, observes at every
// heartbeat and after every publish whether the member waits (a split
// published to it that no live session holds, and a free lane), and takes
// each claim it sees. A member that waited for the bound, LeaseDuration,
// loses its free lanes: the assignment gives it nothing new (assignInput),
// its published splits stop counting as its own for the sticky pass
// (stickyOwner) and the cutter counts no free lane of it (cutInput), until
// it claims.

// watchClaims starts the unclaimed rule for a work lead: every member in
// good standing.
func (f *fleetView) watchClaims() { f.claims = map[string]protocol.ClaimWatch{} }

// unwatchClaims drops the rule's state when the work lead ended.
func (f *fleetView) unwatchClaims() { f.claims = nil }

// claimedAt takes a claim by member inst's current session observed at now
// and reports whether it gave the member back lanes the rule had taken
// (then the assignment must be evaluated again).
func (f *fleetView) claimedAt(inst string, now time.Time) bool {
	w, ok := f.claims[inst]
	if !ok {
		return false
	}
	if next := w.Claim(now); next == (protocol.ClaimWatch{}) {
		delete(f.claims, inst)
	} else {
		f.claims[inst] = next
	}
	return w.Strikes > 0
}

// observeClaims observes every live member at now under the unclaimed rule,
// bound LeaseDuration (a member that neither claims nor fills its lanes for
// as long as a crashed member's session takes to end), and reports whether
// a member's lanes changed (a penalty began or ended) and the members a
// penalty began for. One pass over the split records; only while working
// as leader.
func (f *fleetView) observeClaims(now time.Time, cfg coordination.Config, valueCap int) (changed bool, penalised []string) {
	if f.claims == nil {
		return false, nil
	}
	held := make(map[string]int, f.live.Len())
	waits := map[string]bool{}
	longest := 0
	for id, s := range f.records {
		longest = max(longest, len(id))
		if s.status != protocol.StatusRunnable {
			continue
		}
		if f.heldLive(s) {
			held[s.owner]++
			continue
		}
		if p, ok := f.publishedTo[id]; ok {
			waits[p] = true
		}
	}
	limit := laneLimit(valueCap, longest)
	for m := range f.live.All() {
		w := f.claims[m]
		h := held[m]
		next := w.Observe(now, waits[m] && h < w.Lanes(f.budget(m, cfg, limit), h), cfg.LeaseDuration)
		changed = changed || next.Strikes != w.Strikes || next.Penalised != w.Penalised
		if next.Strikes > w.Strikes {
			penalised = append(penalised, m)
		}
		if next == (protocol.ClaimWatch{}) {
			delete(f.claims, m)
		} else {
			f.claims[m] = next
		}
	}
	return changed, penalised
}

// observeClaims runs the view's observation at now and makes the
// assignment dirty when a member's lanes changed; it warns of each
// penalty, naming the member, its penalties in a row and when the penalty
// ends.
func (l *leaderActor) observeClaims(now time.Time) {
	changed, penalised := l.view.observeClaims(now, l.v.Config, l.v.ValueCap)
	for _, m := range penalised {
		w := l.view.claims[m]
		l.log.Warn("peer left work unclaimed; no new work until it claims",
			"peer", m, "strikes", w.Strikes, "until", w.Until)
	}
	if changed {
		l.pub.changed()
	}
}
