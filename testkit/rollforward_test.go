package testkit

import (
	"context"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// docs/protocol.md, "Runtime split", "Roll-forward": a claimant whose
// roll-forward of the fenced cut does not confirm (the residual's records
// cannot be created) fails the split, charged one attempt, instead of
// handing it back uncharged: it is claimed again at most MaxAttempts times
// and then quarantined, rather than re-claimed at a new epoch every
// heartbeat for ever.
func TestFleetAClaimWhoseRollForwardFailsIsCharged(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		p := NewTestPlanner(jobFP, Splits(1)...)
		w1 := f.Start("w1", p)
		f.Until("w1 holds s00", func() bool { return w1.Holds("s00") })
		// w1 landed a cut commit and crashed before creating the residual.
		ctx := context.Background()
		fp := protocol.Fingerprint(jobFP)
		key := protocol.ProgressKey("s00")
		e, ok, err := f.Store().Get(ctx, store.Durable, key)
		if err != nil || !ok {
			t.Fatalf("progress record: %v %v", ok, err)
		}
		prog, err := protocol.DecodeProgress(key, e.Value, fp)
		if err != nil {
			t.Fatal(err)
		}
		cut, _ := prog.NextCut(RangeDescriptor(50, 100), 1)
		withCut := prog.CommitCut(coordination.SplitProgress{Watermark: 1}, RangeDescriptor(0, 50), cut, 0)
		if _, ok, err := f.Store().Update(ctx, store.Durable, key, protocol.EncodeProgress(withCut), e.Revision); err != nil || !ok {
			t.Fatalf("write the cut: %v %v", ok, err)
		}
		f.Crash("w1")
		// Its next claimant cannot create the residual's spec.
		f.ArmNextStart(func(fs *FaultStore) {
			fs.DropEveryWrite(Match{Keyspace: store.Durable, Prefix: protocol.SpecKey(cut.ID), Ops: OpCreate})
		})
		w2 := f.Start("w2", p)
		f.Advance(20 * lease)
		v, _ := f.Record("s00")
		t.Logf("after 20 leases: %s", v)
		max := f.Config().MaxAttempts
		if v.Status != "quarantined" || v.Attempts != max {
			t.Fatalf("s00: %s, want quarantined after %d attempts", v, max)
		}
		// w1's tenancy at epoch 1, then w2's claims (the first charged as
		// Expired, each failed roll-forward charged) until the quarantine.
		if v.Epoch != uint64(max)+1 {
			t.Fatalf("s00 at epoch %d, want %d: claimed again after its quarantine, or more often than its attempts allow", v.Epoch, max+1)
		}
		if n := countGains(f, "s00"); n != 1 {
			t.Fatalf("s00 delivered %d times, want only w1's tenancy", n)
		}
		f.Until("the verdict", f.AllSettled)
		if got, want := w2.Verdict(), (coordination.Stalled{Quarantined: 1}); got != want {
			t.Fatalf("verdict %#v, want %#v", got, want)
		}
	})
}
