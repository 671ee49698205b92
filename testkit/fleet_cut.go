package testkit

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// Runtime splits in a fleet (docs/protocol.md, "Runtime split"). A split
// whose descriptor is a record range ([RangeDescriptor]) can be cut: a
// member whose Policy.Cut is set reports the range's remaining records on
// every pump (as a driver does each commit interval) and, on CutRequested,
// cuts what remains after its last commit, keeping the asked share, and
// commits the cut through CommitCut. From the decision on it reads only its
// primary, as a source that cut its lane does; until the cut lands it
// retries it before any other commit of the split.

// RangeDescriptor is the descriptor of the records [lo, hi) of a ranged
// split: "r<lo>-<hi>".
func RangeDescriptor(lo, hi int64) []byte { return fmt.Appendf(nil, "r%d-%d", lo, hi) }

// rangeOf parses a RangeDescriptor.
func rangeOf(b []byte) (lo, hi int64, ok bool) {
	a, z, found := strings.Cut(strings.TrimPrefix(string(b), "r"), "-")
	if !found || len(b) == 0 || b[0] != 'r' {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseInt(a, 10, 64)
	hi, err2 := strconv.ParseInt(z, 10, 64)
	return lo, hi, err1 == nil && err2 == nil && lo <= hi
}

// RangeSplits returns n planned splits "s00", "s01", ... each of records
// records ([RangeDescriptor] of consecutive ranges) weighing its records.
func RangeSplits(n int, records int64) []coordination.PlannedSplit {
	out := make([]coordination.PlannedSplit, n)
	for i := range out {
		lo := int64(i) * records
		out[i] = coordination.PlannedSplit{Spec: coordination.SplitSpec{
			ID: coordination.SplitID(fmt.Sprintf("s%02d", i)), Descriptor: RangeDescriptor(lo, lo+records), Weight: uint64(max(1, records)),
		}}
	}
	return out
}

// heldRange is the range a ranged tenancy reads: its Gained descriptor's,
// narrowed by its own cuts.
type heldRange struct{ lo, hi int64 }

// position is where a ranged tenancy stands: its last commit's watermark
// (watermarks count records delivered in this model), within its range.
func (h *Held) position() int64 {
	pos := h.rng.lo
	if c := h.Cut(); c != nil {
		pos = max(pos, min(c.Watermark, h.rng.hi))
	}
	return pos
}

// reportRemaining reports the remaining records of every ranged held
// split, as a driver does once per commit interval.
func (m *Member) reportRemaining() {
	if !m.Policy.Cut || m.err != nil || !m.Alive() {
		return
	}
	for _, id := range m.HeldIDs() {
		if h := m.held[id]; h != nil && h.rng != nil {
			m.coord.ReportRemaining(id, h.Epoch, uint64(h.rng.hi-h.position()))
		}
	}
}

// cutStep acts on h's cut: it retries a cut in flight, or makes the one a
// request asks for. It reports whether h must not be worked this pump (a
// cut is in flight: no other commit goes before it).
func (m *Member) cutStep(id coordination.SplitID, h *Held) bool {
	if h.pendingCut != nil {
		_, err := m.CommitCut(id, coordination.SplitProgress{Watermark: max(h.pendingAt, 1)}, *h.pendingCut)
		return err != nil
	}
	ask := h.cutAsk
	h.cutAsk = nil
	if ask == nil || !m.Policy.Cut || h.rng == nil || ask.Epoch != h.Epoch {
		return false
	}
	for i := 1; i <= ask.Cuts(); i++ {
		pos := h.position()
		at := pos + int64(ask.KeepAt(i)*float64(h.rng.hi-pos))
		if at <= pos || at >= h.rng.hi {
			return false // too little left: refuse, as a source would
		}
		h.pendingCut = &coordination.Cut{Primary: RangeDescriptor(h.rng.lo, at), Residual: RangeDescriptor(at, h.rng.hi), ResidualWeight: uint64(h.rng.hi - at)}
		h.pendingAt = pos
		h.rng.hi = at // from the decision on, the tenancy reads only its primary
		if _, err := m.CommitCut(id, coordination.SplitProgress{Watermark: max(pos, 1)}, *h.pendingCut); err != nil {
			return true
		}
	}
	return false
}

// CommitCut commits a cut of a held split with progress p through the
// coordinator and records the result ("cut"): nil ends the cut in flight
// (the residual exists); Fenced drops the split as Commit does; a refusal
// (coordination.ErrCutRefused) hands it back un-cut after a commit of p
// without the cut, as driver.Cut does.
func (m *Member) CommitCut(split coordination.SplitID, p coordination.SplitProgress, cut coordination.Cut) (coordination.SplitID, error) {
	residual, err := m.coord.CommitCut(split, p, cut)
	m.record("cut", split, err)
	h := m.held[split]
	switch {
	case h == nil:
	case errors.Is(err, coordination.ErrCutRefused):
		h.pendingCut = nil
		if m.Commit(split, p) == nil {
			_ = m.Release(split)
		}
	case err == nil:
		h.pendingCut = nil
		cp := p
		h.Committed = &cp
		m.cuts++
	case coordination.KindOf(err) == coordination.Fenced:
		m.surrender(split)
	}
	return residual, err
}

// Cuts returns how many cuts the member's incarnations landed.
func (m *Member) Cuts() int { return m.cuts }

// checkLiveRanges fails the test when two tenancies of record of ranged
// splits hold a common record: a tenancy is of record while the split
// record names its member and epoch (docs/protocol.md, "Runtime split",
// "No record range held by two live tenancies").
func (f *Fleet) checkLiveRanges() {
	type tenancy struct {
		who string
		heldRange
	}
	var live []tenancy
	for _, m := range f.Live() {
		for _, id := range m.HeldIDs() {
			h := m.held[id]
			v, ok := f.Record(id)
			if h.rng == nil || !ok || v.Epoch != uint64(h.Epoch) || v.Owner != m.instance || v.Status != "runnable" {
				continue
			}
			live = append(live, tenancy{who: fmt.Sprintf("%s holding %s at epoch %d", m.id, id, h.Epoch), heldRange: *h.rng})
		}
	}
	slices.SortFunc(live, func(a, b tenancy) int { return int(a.lo - b.lo) })
	for i := 1; i < len(live); i++ {
		if live[i].lo < live[i-1].hi && live[i].lo < live[i].hi {
			f.Fail("testkit: records [%d, %d) are held by two live tenancies: %s reads [%d, %d), %s reads [%d, %d)\n%s",
				live[i].lo, min(live[i].hi, live[i-1].hi), live[i-1].who, live[i-1].lo, live[i-1].hi, live[i].who, live[i].lo, live[i].hi, f.Describe())
		}
	}
}

// CheckCoverage checks, from the store, that the records of every planned
// ranged split are covered exactly once by the final ranges of the split
// and of all its residuals (docs/protocol.md, "Runtime split", "No record
// lost"): a split's final range is its progress record's descriptor (the
// primary, once cut) or else its spec's, extended by its latest cut's
// residual when that was never created (a parent quarantined before its
// roll-forward keeps the residual's records). With complete set, each of them
// must be completed too. It returns the number of residuals.
func (f *Fleet) CheckCoverage(complete bool) int {
	f.t.Helper()
	durable, err := f.store.List(f.ctx, store.Durable, "")
	if err != nil {
		f.Fail("testkit: listing the store: %v", err)
	}
	plan, _ := f.Plan()
	fp := protocol.Fingerprint(plan.Fingerprint)
	specs, parents, status := map[coordination.SplitID][]byte{}, map[coordination.SplitID]coordination.SplitID{}, map[coordination.SplitID]string{}
	progress := map[coordination.SplitID]protocol.ProgressRecord{}
	for _, e := range durable {
		kind, _ := protocol.ParseKey(store.Durable, e.Key)
		switch kind {
		case protocol.KeySpecRecord:
			s, err := protocol.DecodeSpec(e.Key, e.Value, fp)
			if err != nil {
				f.Fail("testkit: %v", err)
			}
			specs[s.ID] = s.Descriptor
		case protocol.KeySplitRecord:
			r, err := protocol.DecodeSplit(e.Key, e.Value, fp)
			if err != nil {
				f.Fail("testkit: %v", err)
			}
			parents[r.ID], status[r.ID] = r.Parent, r.Status.String()
		case protocol.KeyProgress:
			r, err := protocol.DecodeProgress(e.Key, e.Value, fp)
			if err != nil {
				f.Fail("testkit: %v", err)
			}
			progress[r.ID] = r
		}
	}
	root := func(id coordination.SplitID) coordination.SplitID {
		for parents[id] != "" {
			id = parents[id]
		}
		return id
	}
	tree := map[coordination.SplitID][]heldRange{}
	residuals := 0
	for id := range parents {
		if parents[id] != "" {
			residuals++
		}
		pr := progress[id]
		lo, hi, ok := rangeOf(pr.DescriptorOr(specs[id]))
		if !ok {
			continue
		}
		if c := pr.Cut; c != nil {
			if _, made := parents[c.ID]; !made {
				// A cut whose residual was never created (its parent was
				// quarantined first): the parent's range still holds it.
				if _, rhi, ok := rangeOf(c.Descriptor); ok {
					hi = rhi
				}
			}
		}
		if complete && status[id] != "completed" {
			f.Fail("testkit: split %s (of %s) ended %s, want completed", id, root(id), status[id])
		}
		tree[root(id)] = append(tree[root(id)], heldRange{lo, hi})
	}
	for r, ranges := range tree {
		lo, hi, ok := rangeOf(specs[r])
		if !ok || parents[r] != "" {
			continue
		}
		slices.SortFunc(ranges, func(a, b heldRange) int { return int(a.lo - b.lo) })
		pos := lo
		for _, g := range ranges {
			if g.lo != pos {
				f.Fail("testkit: split %s: records [%d, %d) are %s by the final ranges of it and its residuals %v", r, min(pos, g.lo), max(pos, g.lo),
					map[bool]string{true: "covered twice", false: "not covered"}[g.lo < pos], ranges)
			}
			pos = max(pos, g.hi)
		}
		if pos != hi {
			f.Fail("testkit: split %s: its final ranges %v end at %d, not at its end %d", r, ranges, pos, hi)
		}
	}
	return residuals
}
