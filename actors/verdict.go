package actors

import (
	"context"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/messages"
	"github.com/spate-go/coordination/store"
)

// The commit actor takes the job's verdict (docs/protocol.md, "Completion"):
// when its view passes the gate it lists every split record and judges
// from the listing alone (verdict, commit_decide.go).

// verdictListed is the listing the verdict is judged from.
type verdictListed struct {
	recs []protocol.SplitRecord
	revs []uint64
	err  error
}

// judge evaluates the verdict gate and lists when it passes
// (docs/protocol.md, "Completion").
func (cm *commit) judge() {
	if cm.verdict || cm.judging || cm.departing || !cm.hasPlan || cm.plan.Finality != coordination.PlanFinal {
		return
	}
	n := len(cm.records)
	if uint64(n) < cm.plan.Planned || cm.completed+cm.quarant != n {
		return
	}
	cm.judging = true
	v, pid := cm.v, cm.v.pid.commit
	v.goFunc(func(ctx context.Context) {
		oc, cancel := v.opCtx(ctx)
		defer cancel()
		es, err := v.st.List(oc, store.Durable, protocol.PrefixSplit)
		if err != nil {
			v.send(pid, verdictListed{err: err})
			return
		}
		m := verdictListed{}
		for _, e := range es {
			rec, err := protocol.DecodeSplit(e.Key, e.Value, v.fp.Load())
			if err != nil {
				v.send(pid, verdictListed{err: err})
				return
			}
			m.recs = append(m.recs, rec)
			m.revs = append(m.revs, uint64(e.Revision))
		}
		v.send(pid, m)
	})
}

func (cm *commit) listed(m verdictListed) {
	// The listing is applied to the view while judging is still set, so the
	// folds do not start another listing.
	for i, rec := range m.recs {
		cm.fold(rec.ID, rec, m.revs[i])
	}
	cm.judging = false
	if m.err != nil {
		if !cm.v.fatalIf(m.err) {
			cm.log.Warn("verdict listing failed; will retry", "err", m.err)
		}
		return
	}
	if cm.verdict || cm.departing {
		return
	}
	stalled, completed, quarantined, ok := verdict(m.recs, cm.plan.Planned)
	if !ok {
		return
	}
	cm.verdict = true
	cm.v.route(roleCommit, messages.VerdictReached{Stalled: stalled, Completed: completed, Quarantined: quarantined})
}
