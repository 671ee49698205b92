package testkit

import (
	"testing"

	"github.com/spate-go/coordination/internal/protocol"
)

// Departure (docs/protocol.md, "Departure"): a departing worker also
// returns the split records left naming its session by a claim whose reply
// was lost, so the next claimant takes them as handed back, charging no
// attempt. Before, the next claimant found the record naming an ended
// session and took it over as Expired, charging one; repeated episodes
// could quarantine a healthy split.
func TestFleetDepartReturnsItsLeftovers(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		p := NewTestPlanner(jobFP, Splits(1)...)
		var fault *Fault
		f.ArmNextStart(func(fs *FaultStore) {
			fault = fs.MaybeLandNextWrite(Match{Prefix: protocol.SplitKey("s00"), Ops: OpUpdate})
		})
		w1 := f.Start("w1", p)
		f.Until("w1's claim of s00 lands with its reply lost", fault.Fired)
		left, _ := f.Record("s00")
		if left.Owner != "w1" || left.Nonce == "" || w1.Holds("s00") {
			t.Fatalf("after the maybe-landed claim: record %s, w1 holds it: %t; want a leftover naming w1's session, not held", left, w1.Holds("s00"))
		}
		if err := w1.Depart(); err != nil {
			t.Fatalf("depart: %v", err)
		}
		v, _ := f.Record("s00")
		if v.Owner != "" || v.Attempts != 0 || v.Epoch != left.Epoch || v.Status != "runnable" {
			t.Fatalf("after Depart: record %s, want handed back (owner null, no attempt, epoch %d)", v, left.Epoch)
		}
		w2 := f.Start("w2", p)
		f.Until("w2 claims s00", func() bool { return w2.Holds("s00") })
		if v, _ := f.Record("s00"); v.Attempts != 0 || v.Owner != "w2" {
			t.Fatalf("after w2's claim: record %s, want w2 owning it with no attempt charged", v)
		}
	})
}
