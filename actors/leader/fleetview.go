package leader

import (
	"slices"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
)

// assignCache is one member's assignment record as the leader last saw it.
type assignCache struct {
	inst string
	rec  protocol.AssignmentRecord
	rev  uint64
}

// splitFacts is what the assignment function reads of one split record,
// and the session its owner claimed it in (the startup hold asks whether a
// live member holds a split).
type splitFacts struct {
	owner  string
	nonce  string
	status protocol.Status
	weight uint64
	seen   bool
	epoch  uint64               // the record's epoch: the tenancy a cut request is for
	parent coordination.SplitID // a residual's parent (runtime split); "" otherwise
}

// fleetView is the leader actor's view of the fleet, the assignment
// function's input (docs/protocol.md, "Assignment and the rebalance delay"),
// kept whether or not this worker leads. Written by the leader actor only.
type fleetView struct {
	live       wire.Members // the live members, the watch's (the last PresenceChanged's Live)
	departedAt map[string]time.Time
	records    map[coordination.SplitID]splitFacts
	assigns    map[string]assignCache
	// publishedTo maps a split to the member whose cached assignment names
	// it; kept only while working as leader (nil otherwise), so a worker
	// that does not lead pays nothing per split for others' records.
	publishedTo map[coordination.SplitID]string
	grace       *protocol.Grace // the startup grace window's observations
	// estimates are each live member's remaining-work estimates, as its
	// presence last carried them (docs/protocol.md, "Runtime split").
	estimates map[string][]wire.Estimate
	// estimatedAt is when each live member's presence was last observed:
	// whether its estimates can know of a residual it holds.
	estimatedAt map[string]time.Time
	// residualHeldAt maps each held residual to when the view first saw
	// its current tenancy.
	residualHeldAt map[coordination.SplitID]time.Time
	// cuts maps a tenancy (parent, epoch) to the highest counter among the
	// residuals of it the view has seen.
	cuts map[cutKey]uint64
	// cutOff maps a split to the weight of the residuals cut off it that
	// the view has seen (each counted once, in residualSeen): the split's
	// own weight less that is what it still weighs for the assignment.
	cutOff       map[coordination.SplitID]uint64
	residualSeen map[coordination.SplitID]bool
	// claimed maps a live member to its session in which the view saw a
	// split record name it (a claim): a member that can take work, whose
	// free lanes the cutter counts (cutInput).
	claimed map[string]string
	// claims is each live member session's standing under the unclaimed
	// rule (protocol.ClaimWatch; docs/protocol.md, "Members that do not
	// claim"), absent for one in good standing that is not waiting; kept
	// only while working as leader (nil otherwise), so every member of a
	// new leadership starts in good standing.
	claims map[string]protocol.ClaimWatch
}

func newFleetView(startupGrace time.Duration) fleetView {
	return fleetView{
		departedAt: map[string]time.Time{},
		records:    map[coordination.SplitID]splitFacts{},
		assigns:    map[string]assignCache{},
		grace:      protocol.NewGrace(startupGrace),
		estimates:  map[string][]wire.Estimate{},
		cuts:       map[cutKey]uint64{},

		estimatedAt:    map[string]time.Time{},
		residualHeldAt: map[coordination.SplitID]time.Time{},

		cutOff:       map[coordination.SplitID]uint64{},
		residualSeen: map[coordination.SplitID]bool{},
		claimed:      map[string]string{},
	}
}

// observeFleet folds one watched fleet observation into the view and marks
// the assignment input changed when it did.
func (l *leaderActor) observeFleet(c *actor.Context, msg any) {
	f, now := &l.view, l.v.Clock.Now()
	switch m := msg.(type) {
	case wire.PresenceChanged:
		if m.Deleted {
			if !l.memberLeft(m, now) {
				return
			}
			break
		}
		l.memberSeen(m, now)
	case recordmsg.AssignmentChanged:
		switch old, ok := f.assigns[m.Instance]; {
		case m.Deleted:
			if ok && m.Rev > old.rev {
				f.uncacheAssign(m.Instance)
			}
		case !ok || m.Rev > old.rev:
			f.cacheAssign(assignCache{inst: m.Instance, rec: m.Assignment, rev: m.Rev})
		}
		return
	}
	l.gauges()
	l.tick(c)
}

// memberSeen folds a put of a member's presence into the view.
func (l *leaderActor) memberSeen(m wire.PresenceChanged, now time.Time) {
	f := &l.view
	old, ok := f.live.Get(m.Instance)
	f.live = m.Live
	if !ok && m.Instance != l.v.ID {
		l.log.Info("peer joined", "peer", m.Instance, "live", f.live.Len())
	}
	if !ok || old.MaxInFlight != m.MaxInFlight || !sameReported(f.estimates[m.Instance], m.Remaining) {
		// A new member, a new budget, or a change of the splits it
		// reports estimates of, which pins them (pinReported): a split
		// whose pin ended is balanced at once, not at the next
		// unrelated change.
		l.pub.changed()
	}
	if old.Nonce != m.Nonce {
		delete(f.claims, m.Instance) // a new session starts in good standing
	}
	f.observeEstimates(m.Instance, m.Remaining, now)
	f.grace.Join(m.Instance, now)
	delete(f.departedAt, m.Instance)
}

// memberLeft folds the deletion of m's member's presence into the view;
// false when it was no member.
func (l *leaderActor) memberLeft(m wire.PresenceChanged, now time.Time) bool {
	f, inst := &l.view, m.Instance
	if !f.live.Has(inst) {
		return false
	}
	f.live = m.Live
	delete(f.estimates, inst)
	delete(f.estimatedAt, inst)
	delete(f.claimed, inst)
	delete(f.claims, inst)
	f.grace.Leave(inst)
	if inst != l.v.ID {
		l.log.Info("peer left", "peer", inst, "live", f.live.Len())
		if _, ok := f.departedAt[inst]; !ok && l.v.Config.RebalanceDelay > 0 {
			f.departedAt[inst] = now
		}
	}
	l.pub.changed()
	return true
}

// recordsChanged folds a run of split record changes into the view, and
// ticks once if any of them changed an input of the assignment (a
// deletion always does). It is the hot message, handled apart from
// observeFleet's larger frame (see Receive).
func (l *leaderActor) recordsChanged(c *actor.Context, m recordmsg.RecordsChanged) {
	now := l.v.Clock.Now()
	tick, soon := false, false
	for i := range m.Records {
		if r := &m.Records[i]; r.Deleted {
			l.recordDeleted(r.Split)
			tick = true
			continue
		}
		t, cut := l.recordObserved(&m.Records[i], now)
		tick, soon = tick || t, soon || cut
	}
	if soon {
		l.evaluateCutsSoon(now)
	}
	if tick {
		l.tick(c)
	}
}

// recordDeleted drops a deleted split record from the view.
func (l *leaderActor) recordDeleted(id coordination.SplitID) {
	f := &l.view
	delete(f.records, id)
	delete(f.residualHeldAt, id)
	f.grace.Release(id)
	l.pub.changed()
}

// recordObserved folds a split record put into the view and reports
// whether the leader should tick, and whether the cutter should evaluate
// soon: a split completed (a lane freed, it may idle now) or a residual was
// claimed (it may be cut). While this leader's own planner run
// seeds, a split that appeared waits for the run's next progress report
// (or its end) instead of making the assignment dirty, so that no other
// trigger (a presence renewal) publishes it in between: seeding n splits
// costs O(log n) evaluations, not one per trigger.
func (l *leaderActor) recordObserved(m *recordmsg.RecordChanged, now time.Time) (tick, cutSoon bool) {
	f := &l.view
	old := f.records[m.Split]
	facts := splitFacts{owner: m.Record.Owner, nonce: m.Record.Nonce, status: m.Record.Status, weight: m.Record.Weight, seen: true,
		epoch: m.Record.Epoch, parent: m.Record.Parent}
	if old == facts {
		return false, false // nothing new, for the startup grace either
	}
	f.records[m.Split] = facts
	return l.recordChanged(m.Split, &old, &facts, now)
}

// recordChanged is recordObserved's part for a record whose facts changed
// from old to facts. It is apart, with the facts by pointer, to keep the
// frames of the hot path small (docs/architecture.md: a fresh goroutine
// per activation copies its stack when they outgrow it).
func (l *leaderActor) recordChanged(id coordination.SplitID, old, facts *splitFacts, now time.Time) (tick, cutSoon bool) {
	f := &l.view
	f.grace.Claim(id, facts.owner, now)
	if m, live := f.live.Get(facts.owner); live && facts.owner != "" && m.Nonce == facts.nonce {
		f.claimed[facts.owner] = m.Nonce
		if (old.owner != facts.owner || old.nonce != facts.nonce || old.epoch != facts.epoch) && f.claimedAt(facts.owner, now) {
			l.log.Info("peer claims again; its lanes are back", "peer", facts.owner, "split", id)
			l.pub.changed()
			tick = true
		}
	}
	f.observeResidual(id, facts.parent, facts.weight)
	cutSoon = f.observeResidualTenancy(id, old, facts, now) ||
		facts.status == protocol.StatusCompleted && old.status != protocol.StatusCompleted
	switch {
	case !old.seen && l.run.seeding():
		l.pub.seededMeanwhile()
		return tick, cutSoon
	case !old.seen:
		l.pub.changed()
		return true, cutSoon
	case f.inputChanged(id, old, facts):
		l.pub.changed()
		return true, cutSoon
	}
	return tick, cutSoon
}

func (l *leaderActor) gauges() {
	n := l.view.live.Len()
	if !l.view.live.Has(l.v.ID) {
		n++
	}
	l.v.Metrics.Workers(n)
}

// running reports whether a live member holds a split in its current
// session, as the view's split records show: the fleet is running, not
// starting (protocol.Grace.Hold). O(splits); asked once per leadership.
func (f *fleetView) running() bool {
	for _, s := range f.records {
		if f.heldLive(s) && s.status == protocol.StatusRunnable {
			return true
		}
	}
	return false
}

// expireDepartures closes the rebalance windows that lasted delay and
// reports whether one closed.
func (f *fleetView) expireDepartures(now time.Time, delay time.Duration) bool {
	closed := false
	for i, t := range f.departedAt {
		if now.Sub(t) >= delay {
			delete(f.departedAt, i)
			closed = true
		}
	}
	return closed
}

// inputChanged reports whether a split record change from old to f changes
// an input of the assignment function: its status, its owner as the sticky
// pass sees it (an unowned split counts as its published member's), or a
// rebalance window's reservation. A claim by the member a split is published
// to changes nothing, so a claim storm costs the leader no evaluation.
func (f *fleetView) inputChanged(id coordination.SplitID, old, cur *splitFacts) bool {
	if old.status != cur.status || !old.seen {
		return true
	}
	if old.owner == cur.owner {
		return false
	}
	if _, ok := f.departedAt[old.owner]; ok {
		return true
	}
	if _, ok := f.departedAt[cur.owner]; ok {
		return true
	}
	return f.stickyOwner(id, old.owner) != f.stickyOwner(id, cur.owner)
}

// stickyOwner is split id's owner for the sticky pass when its record names
// owner: the owner, or while it has none the live member whose published
// assignment names the split unless the unclaimed rule penalises it (a
// documented refinement of the assignment input, docs/protocol.md
// "Assignment and the rebalance delay").
func (f *fleetView) stickyOwner(id coordination.SplitID, owner string) string {
	if owner != "" {
		return owner
	}
	if p, ok := f.publishedTo[id]; ok {
		if f.live.Has(p) && !f.claims[p].Penalised {
			return p
		}
	}
	return ""
}

// cacheAssign caches a member's assignment record and its placements.
func (f *fleetView) cacheAssign(a assignCache) {
	f.uncacheAssign(a.inst)
	f.assigns[a.inst] = a
	if f.publishedTo != nil {
		for _, id := range a.rec.Splits {
			f.publishedTo[id] = a.inst
		}
	}
}

// uncacheAssign drops a member's cached assignment record.
func (f *fleetView) uncacheAssign(inst string) {
	old, ok := f.assigns[inst]
	if !ok {
		return
	}
	delete(f.assigns, inst)
	for _, id := range old.rec.Splits {
		if f.publishedTo[id] == inst {
			delete(f.publishedTo, id)
		}
	}
}

// indexPublished builds publishedTo from the cached records.
func (f *fleetView) indexPublished() {
	f.publishedTo = map[coordination.SplitID]string{}
	for inst, a := range f.assigns {
		for _, id := range a.rec.Splits {
			f.publishedTo[id] = inst
		}
	}
}

// unindexPublished drops publishedTo.
func (f *fleetView) unindexPublished() { f.publishedTo = nil }

// knownSplits copies the set of split ids the view holds.
func (f *fleetView) knownSplits() map[coordination.SplitID]bool {
	known := make(map[coordination.SplitID]bool, len(f.records))
	for id := range f.records {
		known[id] = true
	}
	return known
}

// assignInput is the assignment function's input from the view, and the
// live members the unclaimed rule leaves no lane (penalised, holding
// nothing): they are left out of the input, and the publish writes them an
// empty assignment. Every member's lane budget (its presence's, or this
// leader's MaxInFlight) is clamped to coordination.MaxInFlightLimit and to
// what one assignment record can carry under the store's value cap valueCap
// with the view's longest split id (docs/protocol.md, "Size limits"), so no
// budget a peer advertises can make the leader write a record above the
// cap, and then to the lanes the unclaimed rule leaves it
// (protocol.ClaimWatch.Lanes).
func (f *fleetView) assignInput(cfg coordination.Config, fingerprint string, valueCap int) (protocol.AssignInput, []string) {
	longest := 0
	held := make(map[string]int, f.live.Len())
	for id, s := range f.records {
		longest = max(longest, len(id))
		if f.heldLive(s) && s.status == protocol.StatusRunnable {
			held[s.owner]++
		}
	}
	limit := laneLimit(valueCap, longest)
	in := protocol.AssignInput{
		Members:    make([]string, 0, f.live.Len()),
		Caps:       map[string]int{},
		DefaultCap: min(cfg.MaxInFlight, limit),
		FP:         protocol.Fingerprint(fingerprint),
		Splits:     make([]protocol.AssignSplit, 0, len(f.records)),
	}
	var laneless []string
	for m := range f.live.All() {
		lanes := f.claims[m].Lanes(f.budget(m, cfg, limit), held[m])
		if lanes == 0 {
			laneless = append(laneless, m)
			continue
		}
		in.Members = append(in.Members, m)
		in.Caps[m] = lanes
	}
	if cfg.RebalanceDelay > 0 && len(f.departedAt) > 0 {
		in.Reserved = map[coordination.SplitID]bool{}
	}
	for id, s := range f.records {
		// A split record implies its spec (seeding writes the spec first).
		in.Splits = append(in.Splits, protocol.AssignSplit{ID: id, Weight: f.weightLeft(id, s.weight), HasSpec: true, Status: s.status, Owner: f.stickyOwner(id, s.owner)})
		if in.Reserved != nil {
			if _, ok := f.departedAt[s.owner]; ok && s.owner != "" {
				in.Reserved[id] = true
			}
		}
	}
	slices.Sort(laneless)
	return in, laneless
}

// heldLive reports whether split record s is held by its owner's live
// session (the session the owner's presence names).
func (f *fleetView) heldLive(s splitFacts) bool {
	m, live := f.live.Get(s.owner)
	return live && s.owner != "" && m.Nonce == s.nonce
}

// laneLimit is the most lanes any member's budget may count: the
// coordination.MaxInFlightLimit, and what one assignment record can carry
// under the store's value cap valueCap with the view's longest split id,
// longestID bytes (docs/protocol.md, "Size limits"). The callers measure
// longestID in the pass over the split records they make anyway.
func laneLimit(valueCap, longestID int) int {
	return min(coordination.MaxInFlightLimit, protocol.AssignmentCapacity(valueCap, longestID))
}

// budget is member m's lane budget, its presence's MaxInFlight (0: the
// leader's own) clamped to limit.
func (f *fleetView) budget(m string, cfg coordination.Config, limit int) int {
	if b := f.maxInFlight(m); b > 0 {
		return min(int(b), limit)
	}
	return min(cfg.MaxInFlight, limit)
}

// maxInFlight is the budget member m's presence advertises; 0 for the
// leader's own.
func (f *fleetView) maxInFlight(m string) uint32 {
	p, _ := f.live.Get(m)
	return p.MaxInFlight
}

// snapshot copies what a publish reads beside its input: the cached
// records and the open rebalance windows; and the live members, which
// need no copy (the watch never changes a snapshot it sent).
func (f *fleetView) snapshot() (cache map[string]assignCache, members wire.Members, windows map[string]bool) {
	cache = make(map[string]assignCache, len(f.assigns))
	for k, a := range f.assigns {
		a.rec.Splits = slices.Clone(a.rec.Splits)
		a.rec.Cuts = slices.Clone(a.rec.Cuts)
		cache[k] = a
	}
	windows = make(map[string]bool, len(f.departedAt))
	for i := range f.departedAt {
		windows[i] = true
	}
	return cache, f.live, windows
}
