package testkit

import (
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

// A split whose progress record is completed but whose split record is not
// (the completion after the completing commit did not land) is completed by
// the next claim (docs/protocol.md, "Claim protocol", step 3); a completion
// of that claim that errs is retried alone at the next heartbeat, over the
// claim's record: the final record carries the claim's epoch, however many
// completions erred (each retry used to claim the record again, one epoch
// up), and no attempt is charged. The claim
// used to wait for a newer revision of the split record instead, which
// never came: the record named the claimant's live session, so peers took
// it as held and the leader as placed, and the job never finished. Seen in
// CI on a restored PostgreSQL database (store/pgstore TestARolledBackDatabase
// at a 1 s lease), where the restored progress record of a split was
// completed and its split record not.
func TestFleetACompletionThatErrsIsRetried(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		p := NewTestPlanner(jobFP, Splits(1)...)
		var mu sync.Mutex
		var epochs []string // of the completions dropped, in order
		dropped := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(epochs)
		}
		var fault *Fault
		f.ArmNextStart(func(fs *FaultStore) {
			fault = fs.DropEveryWrite(Match{Prefix: protocol.SplitKey("s00"), Ops: OpUpdate, Value: func(b []byte) bool {
				if fields, ok := jsonFields(b); ok && string(fields["status"]) == `"completed"` {
					mu.Lock()
					epochs = append(epochs, string(fields["epoch"]))
					mu.Unlock()
					return true
				}
				return false
			}})
		})
		w1 := f.Start("w1", p)
		w1.Policy.Work = WorkComplete
		// The first completion follows the completing commit; the second is
		// the claim's that found the progress record completed; the third
		// is its retry.
		f.Until("three completions of s00 dropped", func() bool { return len(dropped()) >= 3 })
		w1.Store().Remove(fault)
		f.Until("w1's verdict", func() bool { return w1.Verdict() != nil || w1.Err() != nil })
		if _, ok := w1.Verdict().(coordination.AllComplete); !ok {
			t.Fatalf("verdict %#v (err %v), want AllComplete", w1.Verdict(), w1.Err())
		}
		if v, _ := f.Record("s00"); v.Status != "completed" || v.Attempts != 0 {
			t.Fatalf("record %s, want completed with no attempt charged (the claims were of this session's leftover)", v)
		}
		// Every completion after the first is the claim's, at its epoch.
		claim := dropped()[1]
		for i, e := range dropped()[2:] {
			if e != claim {
				t.Fatalf("completions dropped at epochs %v: retry %d at epoch %s, want the claim's (%s): a retry claimed the record again", dropped(), i+1, e, claim)
			}
		}
		if v, _ := f.Record("s00"); strconv.FormatUint(v.Epoch, 10) != claim {
			t.Fatalf("record %s, want completed at the claim's epoch %s: a retry claimed the record again", v, claim)
		}
	})
}
