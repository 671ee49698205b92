package leader

import (
	"cmp"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
)

// The leader's side of runtime splits (docs/protocol.md, "Runtime split",
// "Who decides"): the fleet view folds the members' remaining-work
// estimates from their presence and the residuals from the split records;
// while working as leader the cutter evaluates protocol.DecideCuts at each
// heartbeat and soon after a lane frees or a residual is claimed, and the
// publisher writes the requests it keeps
// outstanding into their owners' assignment records, in the publish that
// writes assignments.

// cutKey names a tenancy of a split: the parent and epoch of its cuts.
type cutKey struct {
	split coordination.SplitID
	epoch uint64
}

// observeEstimates takes the estimates member inst's presence carries,
// observed at now.
func (f *fleetView) observeEstimates(inst string, es []wire.Estimate, now time.Time) {
	f.estimatedAt[inst] = now
	if len(es) == 0 {
		delete(f.estimates, inst)
		return
	}
	f.estimates[inst] = es
}

// sameReported reports whether estimates a and b name the same tenancies
// (split and epoch), whatever their figures and order: the same splits
// pinned to their owner (pinReported). At most EstimatesMax entries each.
func sameReported(a, b []wire.Estimate) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y wire.Estimate) bool { return x.Split == y.Split && x.Epoch == y.Epoch }) {
			return false
		}
	}
	return true
}

// observeResidual folds a split record of id of weight into the residual
// counters and the parent's weight cut off when it is a residual of parent
// (its decoding checked that id is a residual id of parent).
func (f *fleetView) observeResidual(id, parent coordination.SplitID, weight uint64) {
	if parent == "" {
		return
	}
	if n, ok := protocol.ParseResidualID(id); ok {
		k := cutKey{parent, n.Epoch}
		f.cuts[k] = max(f.cuts[k], n.Counter)
	}
	if !f.residualSeen[id] {
		f.residualSeen[id] = true
		f.cutOff[parent] += weight
	}
}

// pinReported adds to pinned (which it may allocate) every split a live
// member reported an estimate of for its current tenancy, and returns it:
// such a split is kept on its owner by the assignment (docs/protocol.md,
// "Runtime split": a splittable split in progress is divided by cuts, which
// move work without a drain, never moved to balance).
func (f *fleetView) pinReported(pinned map[coordination.SplitID]bool) map[coordination.SplitID]bool {
	for _, e := range f.currentEstimates() {
		if pinned == nil {
			pinned = map[coordination.SplitID]bool{}
		}
		pinned[e.Split] = true
	}
	return pinned
}

// currentEstimates yields each estimate a live member reported for the
// current tenancy of a split it holds, with that split's record.
func (f *fleetView) currentEstimates() iter.Seq2[splitFacts, wire.Estimate] {
	return func(yield func(splitFacts, wire.Estimate) bool) {
		for inst, es := range f.estimates {
			m, live := f.live.Get(inst)
			if !live {
				continue
			}
			for _, e := range es {
				s, ok := f.records[e.Split]
				if ok && s.status == protocol.StatusRunnable && s.owner == inst && s.nonce == m.Nonce && s.epoch == e.Epoch && !yield(s, e) {
					return
				}
			}
		}
	}
}

// observeResidualTenancy keeps when the view first saw residual id held in
// its current tenancy (facts, against old): until its owner's presence
// reports after that, the residual's weight stands for its estimate.
func (f *fleetView) observeResidualTenancy(id coordination.SplitID, old, facts *splitFacts, now time.Time) (claimed bool) {
	if facts.parent == "" {
		return false
	}
	if facts.status != protocol.StatusRunnable || facts.owner == "" {
		delete(f.residualHeldAt, id)
		return false
	}
	if old.owner == facts.owner && old.nonce == facts.nonce && old.epoch == facts.epoch && old.status == facts.status {
		return false
	}
	f.residualHeldAt[id] = now
	return true
}

// weightLeft is what split id of split-record weight w still weighs for
// the assignment once its residuals were cut off it: w less their weight,
// at least 1 (docs/protocol.md, "Runtime split": a parent keeps only its
// primary, so balancing by its full weight would move splits for nothing).
func (f *fleetView) weightLeft(id coordination.SplitID, w uint64) uint64 {
	if c := f.cutOff[id]; c > 0 {
		return max(1, w-min(w, c))
	}
	return w
}

// cutInput is protocol.DecideCuts's input from the view: the live members
// with their budgets clamped as for the assignment (docs/protocol.md, "Size
// limits"), to no free lane while the unclaimed rule penalises a member
// and one on its probation (docs/protocol.md, "Members that do not claim"),
// and to one lane for a member the view has not seen claim a
// split in its current session (docs/protocol.md, "Who decides": only lanes
// that can take work count; a presence that never claims, whatever budget
// it advertises, made the leader shred a split into thousands of residuals
// for it) and the count of their lanes taken (splits their current
// sessions hold, and splits in transit to them: published to them while
// another live session still holds them, so the lane is reserved), the
// runnable splits no live session holds (residuals among them, by their
// weight), and the held splits their owner reported an estimate of for the
// record's epoch, with the requests outstanding or asked within the
// interval. A held residual its owner has not reported on since the view
// saw it claimed stands in with its weight, the parent owner's estimate
// when it cut it (docs/protocol.md, "Who decides"). Any other held split
// without an estimate is left out of Held: DecideCuts neither cuts it nor
// counts it (it counts in its owner's Held). One pass over the split
// records, two map look-ups each; the estimates (at most four per member)
// and the held residuals are looked up by split.
func (f *fleetView) cutInput(cfg coordination.Config, valueCap int, outstanding map[coordination.SplitID]outstandingCut, asked map[coordination.SplitID]time.Time) protocol.CutInput {
	var in protocol.CutInput
	held := make(map[string]uint32, f.live.Len())
	reported := map[coordination.SplitID]bool{}
	longest := 0
	claimed := maps.Clone(f.claimed)
	for id, s := range f.records {
		longest = max(longest, len(id))
		holds := f.heldLive(s)
		if holds {
			claimed[s.owner] = s.nonce // a record observed before its owner's presence
		}
		if s.status != protocol.StatusRunnable {
			continue
		}
		if holds {
			held[s.owner]++
			if to, ok := f.publishedTo[id]; ok && to != s.owner {
				if f.live.Has(to) {
					held[to]++ // in transit: the lane it was moved to is reserved for it
				}
			}
			continue
		}
		in.Unheld = append(in.Unheld, s.weight)
	}
	for s, e := range f.currentEstimates() {
		in.Held = append(in.Held, f.cutHeld(e.Split, s, e.Remaining, outstanding, asked))
		reported[e.Split] = true
	}
	for id, at := range f.residualHeldAt {
		s := f.records[id]
		if !f.heldLive(s) || reported[id] || !f.estimatedAt[s.owner].Before(at) {
			continue // its owner reported on it, or since it was claimed: what it reported (or not) stands
		}
		in.Held = append(in.Held, f.cutHeld(id, s, s.weight, outstanding, asked))
	}
	limit := laneLimit(valueCap, longest)
	for m, p := range f.live.All() {
		budget := f.budget(m, cfg, limit)
		if n, ok := claimed[m]; !ok || n != p.Nonce {
			budget = min(budget, 1) // no claim in this session yet: one lane, until it takes work
		}
		budget = f.claims[m].Lanes(budget, int(held[m])) // none free while the unclaimed rule penalises it
		in.Members = append(in.Members, protocol.CutMember{Instance: m, Budget: uint32(budget), Held: held[m]})
	}
	return in
}

// cutHeld is DecideCuts's view of held split id of facts s with remaining
// work r.
func (f *fleetView) cutHeld(id coordination.SplitID, s splitFacts, r uint64, outstanding map[coordination.SplitID]outstandingCut, asked map[coordination.SplitID]time.Time) protocol.CutHeld {
	_, out := outstanding[id]
	_, recent := asked[id]
	return protocol.CutHeld{Split: id, Owner: s.owner, Epoch: s.epoch, Remaining: r, Reported: true, Outstanding: out || recent, Cuts: f.cuts[cutKey{id, s.epoch}]}
}

// outstandingCut is a cut request the leader asked and keeps publishing
// until its residual appears in the view or one cut interval passed.
type outstandingCut struct {
	owner string
	req   protocol.CutRequest
	at    time.Time
	fresh bool // asked since the last publish took the requests
}

// last is the counter of the request's last residual: its parts are
// numbered from Counter.
func (o outstandingCut) last() uint64 { return o.req.Counter + uint64(max(o.req.Parts, 1)) - 1 }

// cutRequests are the requests a publish writes: each owner's, sorted by
// split, and the owners asked a cut since the last publish, whose records
// are written even when nothing else changed.
type cutRequests struct {
	by    map[string][]protocol.CutRequest
	fresh map[string]bool
}

// cutter decides runtime splits while this worker works as leader: when it
// started leading, the requests outstanding and when each split was last
// asked. Written by the leader actor only.
type cutter struct {
	leadingSince time.Time
	outstanding  map[coordination.SplitID]outstandingCut // nil while not working as leader
	asked        map[coordination.SplitID]time.Time      // the splits asked within the last interval
	due          *clock.Timer                            // fires cutDue for an evaluation put off; nil when none is armed
	dueAt        time.Time
	evaluated    time.Time // the last evaluation that looked at the fleet
}

// cutDue is an evaluation put off until a bound lifts: the start of
// leading's interval, or the quarter interval between evaluations that a
// freed lane waits out (docs/protocol.md, "Who decides").
type cutDue struct{}

// armAt makes the cutter evaluate at `at` under the work lead w, unless an
// evaluation is armed no later already or cuts are off.
func (c *cutter) armAt(w *lead, v *worker.Env, at time.Time) {
	if w == nil || v.Config.EffectiveCutInterval() <= 0 || c.due != nil && !c.dueAt.After(at) {
		return
	}
	if c.due != nil {
		c.due.Stop()
	}
	c.due, c.dueAt = w.after(v, at.Sub(v.Clock.Now()), v.PIDs.Leader, cutDue{}), at
}

// fired records that the armed evaluation's timer fired.
func (c *cutter) fired() { c.due, c.dueAt = nil, time.Time{} }

// lead starts a work lead at now: a new leader asks nothing within an
// interval of it, so a failover never doubles the rate.
func (c *cutter) lead(now time.Time) {
	c.leadingSince, c.outstanding, c.asked = now, map[coordination.SplitID]outstandingCut{}, map[coordination.SplitID]time.Time{}
}

// stop drops what the cutter kept for a work lead that ended.
func (c *cutter) stop() {
	if c.due != nil {
		c.due.Stop()
	}
	*c = cutter{}
}

// evaluate decides the cuts to ask at now (docs/protocol.md, "Who
// decides") and reports whether it asked any: then the assignment must be
// published. It asks nothing while not working as leader, while cuts are
// off (interval 0: a negative CutInterval), within interval of the start of
// leading, or while no member reports an estimate and no residual is held.
func (c *cutter) evaluate(now time.Time, interval time.Duration, view *fleetView, cfg coordination.Config, valueCap int) bool {
	if c.outstanding == nil || interval <= 0 {
		return false
	}
	c.expire(now, interval, view)
	if now.Before(c.leadingSince.Add(interval)) || len(view.estimates) == 0 && len(view.residualHeldAt) == 0 {
		return false
	}
	c.evaluated = now
	in := view.cutInput(cfg, valueCap, c.outstanding, c.asked)
	in.Now, in.LeadingSince, in.Interval, in.MinWeight = now, c.leadingSince, interval, cfg.MinCutWeight
	in.Pending = c.pending(view)
	asks := protocol.DecideCuts(in)
	if len(asks) == 0 {
		return false
	}
	for _, a := range asks {
		c.asked[a.Split] = now
		c.outstanding[a.Split] = outstandingCut{owner: a.Owner, at: now, fresh: true,
			req: protocol.CutRequest{Split: a.Split, Epoch: a.Epoch, Counter: a.Counter, KeepPPM: a.KeepPPM, Parts: a.Parts}}
	}
	return true
}

// pending counts the residuals the outstanding requests asked for that the
// view has not seen yet: lanes already promised to them.
func (c *cutter) pending(view *fleetView) int {
	n := 0
	for id, o := range c.outstanding {
		last := o.last()
		seen := max(view.cuts[cutKey{id, o.req.Epoch}], o.req.Counter-1)
		n += int(last - min(seen, last))
	}
	return n
}

// expire ends the requests whose last residual (of Parts, numbered from
// Counter) the view shows, or that are interval old, and forgets the asks
// an interval old: while the owner cuts a request's parts one after the
// other, none of its next counters is asked again.
func (c *cutter) expire(now time.Time, interval time.Duration, view *fleetView) {
	for id, at := range c.asked {
		if !now.Before(at.Add(interval)) {
			delete(c.asked, id)
		}
	}
	for id, o := range c.outstanding {
		if !now.Before(o.at.Add(interval)) || view.cuts[cutKey{id, o.req.Epoch}] >= o.last() {
			delete(c.outstanding, id)
		}
	}
}

// take returns the outstanding requests for a publish starting at now, and
// marks them taken: an owner's record is written for a request once, when
// it was asked (or asked again), not at every publish.
func (c *cutter) take(now time.Time, interval time.Duration, view *fleetView) cutRequests {
	c.expire(now, interval, view)
	var rs cutRequests
	if len(c.outstanding) == 0 {
		return rs
	}
	rs.by, rs.fresh = map[string][]protocol.CutRequest{}, map[string]bool{}
	for id, o := range c.outstanding {
		rs.by[o.owner] = append(rs.by[o.owner], o.req)
		if o.fresh {
			rs.fresh[o.owner] = true
			o.fresh = false
			c.outstanding[id] = o
		}
	}
	for _, reqs := range rs.by {
		slices.SortFunc(reqs, func(a, b protocol.CutRequest) int { return cmp.Compare(a.Split, b.Split) })
	}
	return rs
}

// retake marks every outstanding request fresh again after a publish
// failed: the retry at the next heartbeat writes its owner's record even
// when nothing else changed.
func (c *cutter) retake() {
	for id, o := range c.outstanding {
		o.fresh = true
		c.outstanding[id] = o
	}
}

// recordCuts returns the requests of want a member's assignment record
// naming splits (sorted) carries: those for splits it names (decoding
// rejects any other), the last ones left out while the record, encoded
// with generation gen, would exceed the store's value cap (requests are
// optional: the split may be asked at a later publish).
func recordCuts(want []protocol.CutRequest, gen uint64, splits []coordination.SplitID, valueCap int) []protocol.CutRequest {
	var rs []protocol.CutRequest
	for _, r := range want {
		if _, ok := slices.BinarySearch(splits, r.Split); ok {
			rs = append(rs, r)
		}
	}
	for len(rs) > 0 && valueCap > 0 && len(protocol.EncodeAssignment(protocol.AssignmentRecord{Generation: gen, Splits: splits, Cuts: rs})) > valueCap {
		rs = rs[:len(rs)-1]
	}
	if len(rs) == 0 {
		return nil
	}
	return rs
}
