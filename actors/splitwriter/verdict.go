package splitwriter

import (
	"context"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// The split-writer actor takes the job's verdict (docs/protocol.md, "Completion",
// and "Runtime split", "Completion"): when its view passes the gate it lists
// every split record and judges from the listing, which decides only if
// every record it shows was already in the view, terminal, when it began.

// verdictListed is the listing the verdict is judged from; before holds the
// ids of the view's split records when the listing began (all terminal:
// the gate passed).
type verdictListed struct {
	recs   []protocol.SplitRecord
	revs   []uint64
	before map[coordination.SplitID]struct{}
	err    error
}

// judge evaluates the verdict gate and lists when it passes
// (docs/protocol.md, "Completion").
func (sw *splitWriterActor) judge() {
	if sw.verdict || sw.judging || sw.departing || !sw.hasPlan || sw.plan.Finality != coordination.PlanFinal {
		return
	}
	n := len(sw.records)
	if uint64(n) < sw.plan.Planned || sw.completed+sw.quarant != n {
		return
	}
	sw.judging = true
	before := make(map[coordination.SplitID]struct{}, n)
	for id := range sw.records {
		before[id] = struct{}{}
	}
	v, pid, fp := sw.v, sw.v.PIDs.SplitWriter, sw.fp
	v.Go(func(ctx context.Context) {
		oc, cancel := v.OpCtx(ctx)
		defer cancel()
		es, err := v.Store.List(oc, store.Durable, protocol.PrefixSplit)
		if err != nil {
			v.Send(pid, verdictListed{err: err})
			return
		}
		m := verdictListed{before: before}
		for _, e := range es {
			rec, err := protocol.DecodeSplit(e.Key, e.Value, fp)
			if err != nil {
				v.Send(pid, verdictListed{err: err})
				return
			}
			m.recs = append(m.recs, rec)
			m.revs = append(m.revs, uint64(e.Revision))
		}
		v.Send(pid, m)
	})
}

func (sw *splitWriterActor) listed(m verdictListed) {
	// The listing is applied to the view while judging is still set, so the
	// folds do not start another listing.
	for i := range m.recs {
		sw.fold(m.recs[i].ID, &m.recs[i], m.revs[i])
	}
	sw.judging = false
	if m.err != nil {
		if !sw.v.FatalIf(m.err) {
			sw.log.Warn("verdict listing failed; will retry", "err", m.err)
		}
		return
	}
	if sw.verdict || sw.departing {
		return
	}
	if !listedFromView(m.recs, m.before) {
		// A record the view did not hold when the listing began (a residual
		// created meanwhile): the listing is applied, judge the view again
		// (docs/protocol.md, "Runtime split", "Completion").
		sw.judge()
		return
	}
	stalled, completed, quarantined, ok := verdict(m.recs, sw.plan.Planned)
	if !ok {
		return
	}
	sw.verdict = true
	sw.raise(verdictEvent(stalled, completed, quarantined))
}

// listedFromView reports whether every record of a verdict's listing was in
// the view (the ids before) when the listing began: only then may the
// listing decide (docs/protocol.md, "Runtime split", "Completion").
func listedFromView(recs []protocol.SplitRecord, before map[coordination.SplitID]struct{}) bool {
	for _, r := range recs {
		if _, ok := before[r.ID]; !ok {
			return false
		}
	}
	return true
}

// verdict judges the job from a listing of split records alone
// (docs/protocol.md, "Completion"). ok is false when no verdict can be given.
func verdict(recs []protocol.SplitRecord, planned uint64) (stalled bool, completed, quarantined uint64, ok bool) {
	if uint64(len(recs)) < planned {
		return false, 0, 0, false
	}
	for _, r := range recs {
		switch r.Status {
		case protocol.StatusCompleted:
			completed++
		case protocol.StatusQuarantined:
			quarantined++
		default:
			return false, 0, 0, false
		}
	}
	return quarantined > 0, completed, quarantined, true
}
