package testkit

import (
	"testing"

	"github.com/spate-go/coordination"
)

// TestFleetCutsRunningSplitsForIdleLanesAndLosesNoRecord: two members of
// four lanes each hold the only two splits; the leader asks for cuts until
// the lanes are busy, the residuals are placed and held, and once the
// members complete what they hold, the job ends AllComplete with every
// record of each split covered exactly once by it and its residuals.
func TestFleetCutsRunningSplitsForIdleLanesAndLosesNoRecord(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		p := NewTestPlanner(jobFP, RangeSplits(2, 1000)...)
		var ms []*Member
		for _, id := range []string{"w1", "w2"} {
			m := f.Start(id, p, setMaxInFlight(4))
			m.Policy = Policy{Work: WorkHold, Cut: true}
			ms = append(ms, m)
		}
		f.Until("the fleet's 8 lanes are all busy with cut splits", func() bool {
			return len(ms[0].HeldIDs())+len(ms[1].HeldIDs()) == 8
		})
		cuts := ms[0].Cuts() + ms[1].Cuts()
		if cuts != 6 {
			t.Fatalf("%d cuts landed, want 6 (2 splits over 8 lanes)", cuts)
		}
		for _, m := range ms {
			m.Policy.Work = WorkComplete
		}
		f.Until("every member reaches a verdict", f.AllSettled)
		f.CheckVerdicts()
		for _, m := range ms {
			if _, ok := m.Verdict().(coordination.AllComplete); !ok {
				t.Fatalf("%s: verdict %#v, want AllComplete", m.ID(), m.Verdict())
			}
		}
		if n := f.CheckCoverage(true); n != 6 {
			t.Fatalf("%d residuals in the store, want 6", n)
		}
	})
}
