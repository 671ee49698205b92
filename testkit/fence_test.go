package testkit

import (
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

// A new leader's generation fence (the plan record's CAS to its generation)
// lands but its reply is lost (found by TestFleetSystemProperty, issue #12:
// with the leader's watches silent, the leader then resigned and nobody led
// again). The read after the retry's lost compare shows the fence's own
// write: the fence landed, and the leader leads on at its generation.
func TestFleetMaybeLandedGenerationFenceKeepsTheLeader(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		var fence *Fault
		f.ArmNextStart(func(fs *FaultStore) {
			fence = fs.MaybeLandNextWrite(Match{Prefix: protocol.KeyPlan, Ops: OpUpdate})
		})
		_, p := newJob(3)
		w1 := f.Start("w1", p)
		w1.Policy.Work = WorkComplete
		f.Until("the verdict", f.AllSettled)
		if !fence.Fired() {
			t.Fatal("the generation fence was not faulted")
		}
		if _, ok := w1.Verdict().(coordination.AllComplete); !ok {
			t.Fatalf("verdict %#v, want AllComplete", w1.Verdict())
		}
		if pl, _ := f.Plan(); pl.Generation != 1 {
			t.Fatalf("plan generation %d, want 1: the first leader resigned over its own landed fence and a second election ran", pl.Generation)
		}
	})
}
