package splitwriter

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// The roll-forward of docs/protocol.md ("Runtime split", "Roll-forward"): a
// claimant whose fence finds a cut in the progress record creates the
// residual's spec and split record before the tenancy begins (or the split
// completes); a record found under a residual's key is accepted only if it
// is that cut's; a create that does not confirm fails the claim like a
// fence that could not be written, and fails the split: owner null, charged
// one attempt (beyond the Expired claim's), the claim retried at the next
// heartbeat.
func TestClaimRollsTheFencedCutForward(t *testing.T) {
	fp := protocol.Fingerprint("job:v1")
	dead := protocol.SplitRecord{ID: "a", FP: fp, Weight: 9, Epoch: 2, Owner: "dead", Nonce: "d1", Status: protocol.StatusRunnable}
	prevFence := protocol.FreshProgress("a", fp, "dead", 2, 0)
	cut, _ := prevFence.NextCut([]byte("rest"), 4)
	cutRec := prevFence.CommitCut(coordination.SplitProgress{Watermark: 7}, []byte("primary"), cut, 0)
	done := cutRec.Commit(coordination.SplitProgress{Watermark: 9, Completed: true}, 0)
	rid := protocol.ResidualID("a", 2, 1)
	resSpec := cut.ResidualSpec(fp, 5)
	foreign := resSpec
	foreign.Descriptor = []byte("someone else's")
	tests := []struct {
		name       string
		prog       protocol.ProgressRecord // what the previous tenancy left
		spec, foe  bool                    // the residual's spec exists already (its own, or a foreign one)
		split      bool                    // the residual's split record exists already
		failCreate string                  // the key whose create fails
		wantOut    worker.CASOutcome
		wantDone   bool
		wantRes    bool // both residual records exist afterwards
		wantFatal  bool
	}{
		{name: "a cut without residual records: both created", prog: cutRec, wantOut: worker.CASLanded, wantRes: true},
		{name: "a spec without split record: the split record is created", prog: cutRec, spec: true, wantOut: worker.CASLanded, wantRes: true},
		{name: "both found: confirmed", prog: cutRec, spec: true, split: true, wantOut: worker.CASLanded, wantRes: true},
		{name: "a completed record with a cut: rolled forward, then completed", prog: done, wantOut: worker.CASLanded, wantDone: true, wantRes: true},
		{name: "a failed create fails the split, charged", prog: cutRec, failCreate: protocol.SplitKey(rid), wantOut: worker.CASUnconfirmed},
		{name: "a foreign spec under the residual's key is Fatal", prog: cutRec, foe: true, wantOut: worker.CASUnconfirmed, wantFatal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := &workertest.FaultyStore{Store: memstore.New(30 * time.Second)}
			v := workertest.NewEnv(t, fs)
			key, pkey := protocol.SplitKey("a"), protocol.ProgressKey("a")
			workertest.Put(t, fs, protocol.SpecKey("a"), protocol.EncodeSpec(protocol.NewSpec(coordination.SplitSpec{ID: "a", Descriptor: []byte("whole"), Weight: 9}, fp, 5)), 0)
			rev := workertest.Put(t, fs, key, protocol.EncodeSplit(dead), 0)
			workertest.Put(t, fs, pkey, protocol.EncodeProgress(tt.prog), 0)
			switch {
			case tt.foe:
				workertest.Put(t, fs, protocol.SpecKey(rid), protocol.EncodeSpec(foreign), 0)
			case tt.spec:
				workertest.Put(t, fs, protocol.SpecKey(rid), protocol.EncodeSpec(resSpec), 0)
			}
			if tt.split {
				workertest.Put(t, fs, protocol.SplitKey(rid), protocol.EncodeSplit(cut.ResidualSplit("a", fp, 0)), 0)
			}
			fs.FailCreate = tt.failCreate
			cand, ok := protocol.Classify(protocol.CandidateInput{Record: dead, Me: "me", MyNonce: "n", MaxAttempts: 4})
			if !ok {
				t.Fatal("not a candidate")
			}
			d := claimSplit(context.Background(), v, claimRequest{Candidate: cand, Record: dead, RecordRev: rev, Nonce: v.Nonce, FP: workertest.FP}, 0)
			if d.outcome != tt.wantOut || d.done != tt.wantDone {
				t.Fatalf("outcome %v done %v, want %v done %v", d.outcome, d.done, tt.wantOut, tt.wantDone)
			}
			f := v.Failure()
			if (coordination.KindOf(f) == coordination.Fatal) != tt.wantFatal {
				t.Fatalf("failure %v, want Fatal %v", f, tt.wantFatal)
			}
			if tt.wantFatal && !strings.Contains(f.Error(), protocol.SpecKey(rid)) {
				t.Fatalf("failure %v does not name %s", f, protocol.SpecKey(rid))
			}
			ctx := context.Background()
			se, specFound, _ := fs.Get(ctx, store.Durable, protocol.SpecKey(rid))
			re, splitFound, _ := fs.Get(ctx, store.Durable, protocol.SplitKey(rid))
			if tt.wantRes != (specFound && splitFound) {
				t.Fatalf("residual spec %v split %v, want both %v", specFound, splitFound, tt.wantRes)
			}
			if tt.wantRes {
				if !bytes.Equal(se.Value, protocol.EncodeSpec(resSpec)) {
					t.Fatalf("residual spec %s, want %s", se.Value, protocol.EncodeSpec(resSpec))
				}
				r, err := protocol.DecodeSplit(re.Key, re.Value, fp)
				if err != nil || r.Parent != "a" || r.Weight != 4 || r.Epoch != 0 || r.Status != protocol.StatusRunnable {
					t.Fatalf("residual split record %+v (%v), want a fresh runnable record of weight 4 naming parent a", r, err)
				}
			}
			e, _, _ := fs.Get(ctx, store.Durable, key)
			got, _ := protocol.DecodeSplit(e.Key, e.Value, fp)
			switch {
			case tt.wantDone && got.Status != protocol.StatusCompleted:
				t.Fatalf("split record %+v, want completed", got)
			case tt.wantOut == worker.CASUnconfirmed && !tt.wantFatal && (got.Owner != "" || got.Attempts != 2 || got.Status != protocol.StatusRunnable):
				t.Fatalf("split record %+v, want failed: owner null, 2 attempts, runnable", got) // a Fatal halts every write
			case tt.wantOut == worker.CASLanded && !tt.wantDone:
				if d.gen != 5 || !bytes.Equal(d.prog.DescriptorOr(d.spec.Descriptor), []byte("primary")) {
					t.Fatalf("generation %d, descriptor %q: want 5 and the primary's", d.gen, d.prog.DescriptorOr(d.spec.Descriptor))
				}
			}
		})
	}
}
