package protocol

import (
	"maps"
	"slices"
	"time"

	"github.com/spate-go/coordination"
)

// Grace is the startup grace window of the assignment (like Kafka's
// group.initial.rebalance.delay.ms): a split is pinned to its current owner,
// so no assignment moves it away, while the window since any of these is
// open:
//
//   - the leader started leading (the job's start, or a failover), so the
//     members that start together can all join before anything moves;
//   - the owner joined, as first observed here;
//   - the owner claimed the split, as first observed here.
//
// The last rule also stops a split from bouncing between members.
//
// Fill is delayed only while the fleet starts (see [Grace.Hold]): when the
// leader started leading a fleet in which no live member held a split, it
// places no split that no live member owns until members stop joining (a
// sixth of the window passed with no new member, counting the joins it saw
// before it led) or the window since it
// started leading ends, so the members that start together are all placed
// by the first assignment, balanced, and nothing moves after. In a running
// fleet (a failover) unowned splits are assigned at once.
//
// Grace holds only observation times; it does no I/O and is not safe for
// concurrent use (the leader actor owns it). A zero or negative window pins
// and holds nothing. See docs/protocol.md, "Assignment and the rebalance
// delay".
type Grace struct {
	window  time.Duration
	since   time.Time // the leader started leading; zero when not leading
	joined  map[string]time.Time
	claimed map[coordination.SplitID]graceClaim
	next    time.Time // the earliest pin end of the last Pinned, zero if none
	hold    holdState
}

// holdState is where the startup hold of a leadership stands.
type holdState int

const (
	holdUnknown holdState = iota // not asked yet in this leadership
	holding                      // the fleet was starting: fill waits
	holdOver                     // the fleet was running, or the hold ended: place at once
)

// holdQuiet is the share of the window that must pass with no member
// joining for the startup hold to end before the window does.
const holdQuiet = 6

// graceClaim is the owner a split's record names and when it was first
// observed.
type graceClaim struct {
	owner string
	at    time.Time
}

// NewGrace returns a Grace with window and nothing observed.
func NewGrace(window time.Duration) *Grace {
	return &Grace{window: window, joined: map[string]time.Time{}, claimed: map[coordination.SplitID]graceClaim{}}
}

// Lead records that this worker started leading at now; the next Hold
// asks afresh whether the fleet is starting.
func (g *Grace) Lead(now time.Time) { g.since, g.hold = now, holdUnknown }

// Hold returns in with the splits the startup hold keeps unplaced at now
// added to in.Reserved, and when the hold ends as things stand; the zero
// time (and in unchanged) when no hold applies. The hold applies when the
// fleet was starting: at the first Hold of the leadership, running
// reported that no live member holds a split in its current session
// (running is called once per leadership). It lasts until a sixth of the
// window has passed since a member last joined (as first observed, before
// or after this worker started leading; see holdEnd) or the window since it
// started leading ends, whichever comes first, so each join extends it; once over,
// it is over for the leadership. It keeps back every split whose Owner is
// not one of in.Members, so a member's own splits (a restart under the
// same instance id) go back to it at once, and everything else is placed
// when the hold ends, over every member that joined by then.
func (g *Grace) Hold(now time.Time, in AssignInput, running func() bool) (AssignInput, time.Time) {
	if g.window <= 0 || g.since.IsZero() || g.hold == holdOver {
		return in, time.Time{}
	}
	if g.hold == holdUnknown {
		g.hold = holding
		if running() {
			g.hold = holdOver
			return in, time.Time{}
		}
	}
	end := g.holdEnd()
	if !now.Before(end) {
		g.hold = holdOver
		return in, time.Time{}
	}
	members := make(map[string]bool, len(in.Members))
	for _, m := range in.Members {
		members[m] = true
	}
	reserved := maps.Clone(in.Reserved)
	for _, s := range in.Splits {
		if !members[s.Owner] {
			if reserved == nil {
				reserved = map[coordination.SplitID]bool{}
			}
			reserved[s.ID] = true
		}
	}
	in.Reserved = reserved
	return in, end
}

// holdEnd returns when the startup hold of this leadership ends as far as
// the joins observed tell: a sixth of the window after the last member
// joined at or before it started leading (or after it started leading, when
// it knows of none), pushed back to a sixth of the window after each member
// that joined since, before the hold ended, and at the latest the window
// after it started leading. A join after the end does not reopen the hold.
// So a leader elected after its members all joined (a restart whose leader
// first replayed a large job) waits no longer, while one elected among
// members still joining waits for them as before; its own join, observed
// when its watch of the presences delivered it, is among those counted.
func (g *Grace) holdEnd() time.Time {
	limit, quiet := g.since.Add(g.window), g.window/holdQuiet
	var before time.Time
	joins := make([]time.Time, 0, len(g.joined))
	for _, t := range g.joined {
		if t.After(g.since) {
			joins = append(joins, t)
		} else if t.After(before) {
			before = t
		}
	}
	if before.IsZero() {
		before = g.since
	}
	end := before.Add(quiet)
	if end.Before(g.since) {
		end = g.since
	}
	slices.SortFunc(joins, time.Time.Compare)
	for _, t := range joins {
		if !t.Before(end) {
			break
		}
		end = t.Add(quiet)
	}
	if end.After(limit) {
		return limit
	}
	return end
}

// Join records that member inst was observed at now; only the first
// observation since it was last seen leaving counts.
func (g *Grace) Join(inst string, now time.Time) {
	if _, ok := g.joined[inst]; !ok {
		g.joined[inst] = now
	}
}

// Leave forgets member inst.
func (g *Grace) Leave(inst string) { delete(g.joined, inst) }

// Claim records that split's record names owner, observed at now; only a
// change of owner restarts the split's window, and "" (no owner) is a
// Release.
func (g *Grace) Claim(split coordination.SplitID, owner string, now time.Time) {
	if owner == "" {
		g.Release(split)
		return
	}
	if c, ok := g.claimed[split]; !ok || c.owner != owner {
		g.claimed[split] = graceClaim{owner: owner, at: now}
	}
}

// Release forgets split's owner.
func (g *Grace) Release(split coordination.SplitID) { delete(g.claimed, split) }

// Pinned returns the splits of splits that must stay with their Owner at
// now, or nil. It remembers when the earliest of those pins ends, for Due.
func (g *Grace) Pinned(now time.Time, splits []AssignSplit) map[coordination.SplitID]bool {
	g.next = time.Time{}
	if g.window <= 0 {
		return nil
	}
	var pinned map[coordination.SplitID]bool
	for _, s := range splits {
		if s.Owner == "" {
			continue
		}
		end := g.pinEnd(s)
		if !now.Before(end) {
			continue
		}
		if pinned == nil {
			pinned = map[coordination.SplitID]bool{}
		}
		pinned[s.ID] = true
		if g.next.IsZero() || end.Before(g.next) {
			g.next = end
		}
	}
	return pinned
}

// pinEnd returns when s's pin ends: the latest end of the windows that apply
// to it (the zero time when none does).
func (g *Grace) pinEnd(s AssignSplit) time.Time {
	var end time.Time
	later := func(t time.Time) {
		if !t.IsZero() && t.Add(g.window).After(end) {
			end = t.Add(g.window)
		}
	}
	later(g.since)
	later(g.joined[s.Owner])
	if c, ok := g.claimed[s.ID]; ok && c.owner == s.Owner {
		later(c.at)
	}
	return end
}

// Due reports whether a pin returned by the last Pinned has ended at now,
// so the assignment should be evaluated again; it reports each end once.
func (g *Grace) Due(now time.Time) bool {
	if g.next.IsZero() || now.Before(g.next) {
		return false
	}
	g.next = time.Time{}
	return true
}

// KeepPinned returns out with every pinned split of in placed back on its
// Owner, when that owner is a member and the split is assignable (runnable,
// with a spec, not reserved). A split taken back from another member leaves
// that member a split short; a member pushed above its budget by the splits
// it keeps gives up the splits out newly named it (not owned by it), highest
// id first, until it fits, and those stay unassigned for this evaluation. No
// other split moves. The result is deterministic; every list stays sorted.
func KeepPinned(in AssignInput, out AssignOutput, pinned map[coordination.SplitID]bool) AssignOutput {
	if len(pinned) == 0 || len(out.Assigned) == 0 {
		return out
	}
	at := map[coordination.SplitID]string{}
	for m, ids := range out.Assigned {
		for _, id := range ids {
			at[id] = m
		}
	}
	owner := map[coordination.SplitID]string{}
	var keep []coordination.SplitID
	for _, s := range in.Splits {
		owner[s.ID] = s.Owner
		if !pinned[s.ID] || s.Status != StatusRunnable || !s.HasSpec || in.Reserved[s.ID] {
			continue
		}
		if _, member := out.Assigned[s.Owner]; member && at[s.ID] != s.Owner {
			keep = append(keep, s.ID)
		}
	}
	if len(keep) == 0 {
		return out
	}
	slices.Sort(keep)
	keep = slices.Compact(keep)
	assigned := make(map[string][]coordination.SplitID, len(out.Assigned))
	for m, ids := range out.Assigned {
		assigned[m] = slices.Clone(ids)
	}
	touched := map[string]bool{}
	for _, id := range keep {
		if from, ok := at[id]; ok {
			assigned[from] = slices.DeleteFunc(assigned[from], func(x coordination.SplitID) bool { return x == id })
		}
		to := owner[id]
		assigned[to] = append(assigned[to], id)
		touched[to] = true
	}
	for m := range touched {
		ids := assigned[m]
		slices.Sort(ids)
		for i := len(ids) - 1; i >= 0 && len(ids) > budget(in, m); i-- {
			if owner[ids[i]] != m {
				ids = slices.Delete(ids, i, i+1)
			}
		}
		assigned[m] = ids
	}
	return AssignOutput{Assigned: assigned, Moves: out.Moves, Bounded: out.Bounded}
}

// budget is member m's lane budget as Assign computes it.
func budget(in AssignInput, m string) int {
	c := in.DefaultCap
	if v, ok := in.Caps[m]; ok && v > 0 {
		c = v
	}
	return max(1, c)
}
