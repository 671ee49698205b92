package splitwriter

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// The claim protocol at the level of one claim (docs/protocol.md, "Claim
// protocol"): a stale view loses the split record CAS and writes nothing; a
// live owner session found by the confirmation read is never robbed; a
// commit of the previous tenancy that lands before the fence is carried
// into the new tenancy; a completed progress record completes the split
// record instead of a Gained; a quarantine writes only the split record.
func TestClaimSplit(t *testing.T) {
	const maxAttempts = 4
	fp := protocol.Fingerprint("job:v1")
	dead := protocol.SplitRecord{ID: "a", FP: fp, Weight: 1, Epoch: 2, Owner: "dead", Nonce: "d1", Status: protocol.StatusRunnable}
	prevFence := protocol.FreshProgress("a", fp, "dead", 2, 0)
	tests := []struct {
		name      string
		view      protocol.SplitRecord
		moved     *protocol.SplitRecord    // a split record write after the view
		late      *protocol.ProgressRecord // a progress write after the view (a late commit)
		presence  string                   // the owner's live session nonce, "" for none
		wantOut   worker.CASOutcome
		wantDone  bool
		wantSplit func(protocol.SplitRecord) protocol.SplitRecord // from the view
		wantProg  *coordination.SplitProgress
		noSpec    bool // the spec record was deleted outside the library
		failFence bool // the progress fence's read fails
		wantFatal bool
	}{
		{name: "an expired claim fences and charges one attempt", view: dead, wantOut: worker.CASLanded,
			wantSplit: func(r protocol.SplitRecord) protocol.SplitRecord { return r.Claim("me", "n", 3, true, 0) }},
		{name: "a late commit of the previous tenancy is carried", view: dead,
			late: workertest.Ptr(prevFence.Commit(coordination.SplitProgress{Watermark: 7}, 0)), wantOut: worker.CASLanded,
			wantSplit: func(r protocol.SplitRecord) protocol.SplitRecord { return r.Claim("me", "n", 3, true, 0) },
			wantProg:  &coordination.SplitProgress{Watermark: 7}},
		{name: "a completed progress record completes the split", view: dead,
			late: workertest.Ptr(prevFence.Commit(coordination.SplitProgress{Watermark: 9, Completed: true}, 0)), wantOut: worker.CASLanded, wantDone: true,
			wantSplit: func(r protocol.SplitRecord) protocol.SplitRecord { return r.Claim("me", "n", 3, true, 0).Complete(0) },
			wantProg:  &coordination.SplitProgress{Watermark: 9, Completed: true}},
		{name: "a live owner session is never robbed", view: dead, presence: "d1", wantOut: worker.CASFenced,
			wantSplit: func(r protocol.SplitRecord) protocol.SplitRecord { return r }},
		{name: "a stale view writes nothing", view: dead, moved: workertest.Ptr(dead.HandBack(0)), wantOut: worker.CASFenced,
			wantSplit: func(r protocol.SplitRecord) protocol.SplitRecord { return r.HandBack(0) }},
		{name: "a quarantine on takeover writes only the split record", view: func() protocol.SplitRecord { r := dead; r.Attempts = maxAttempts - 1; return r }(),
			wantOut: worker.CASLanded, wantSplit: func(r protocol.SplitRecord) protocol.SplitRecord { return r.QuarantineOnTakeover(0) }},
		{name: "a missing spec is Fatal and writes nothing", view: dead, noSpec: true, wantOut: worker.CASUnconfirmed, wantFatal: true,
			wantSplit: func(r protocol.SplitRecord) protocol.SplitRecord { return r }},
		// Only lost writes (a rolled-back store) or a hand edit put the
		// progress record at or above the claim's epoch: the claim hands
		// the split back at the progress record's epoch, so that the next
		// claim fences above it, instead of keeping a split it never runs.
		{name: "a fence at the claim's epoch supersedes it: handed back", view: dead, late: workertest.Ptr(prevFence.Fence("peer", 3, 0)), wantOut: worker.CASFenced,
			wantSplit: func(r protocol.SplitRecord) protocol.SplitRecord { return r.Claim("me", "n", 3, true, 0).HandBack(0) }},
		{name: "a fence above the claim's epoch: handed back at its epoch", view: dead, late: workertest.Ptr(prevFence.Fence("peer", 9, 0)), wantOut: worker.CASFenced,
			wantSplit: func(r protocol.SplitRecord) protocol.SplitRecord {
				r = r.Claim("me", "n", 3, true, 0).HandBack(0)
				r.Epoch = 9
				return r
			}},
		{name: "a progress record at the top epoch is Fatal", view: dead, late: workertest.Ptr(prevFence.Fence("peer", math.MaxUint64, 0)), wantOut: worker.CASUnconfirmed, wantFatal: true,
			wantSplit: func(r protocol.SplitRecord) protocol.SplitRecord { return r.Claim("me", "n", 3, true, 0) }},
		{name: "a failed fence hands the claim back", view: dead, failFence: true, wantOut: worker.CASUnconfirmed,
			wantSplit: func(r protocol.SplitRecord) protocol.SplitRecord { return r.Claim("me", "n", 3, true, 0).HandBack(0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := &workertest.FaultyStore{Store: memstore.New(30 * time.Second)}
			v := workertest.NewEnv(t, fs)
			v.Config.MaxAttempts = maxAttempts
			key, pkey := protocol.SplitKey("a"), protocol.ProgressKey("a")
			if !tt.noSpec {
				workertest.Put(t, fs, protocol.SpecKey("a"), protocol.EncodeSpec(protocol.NewSpec(coordination.SplitSpec{ID: "a", Weight: 1}, fp, 1)), 0)
			}
			rev := workertest.Put(t, fs, key, protocol.EncodeSplit(tt.view), 0)
			prev := workertest.Put(t, fs, pkey, protocol.EncodeProgress(prevFence), 0)
			if tt.moved != nil {
				workertest.Put(t, fs, key, protocol.EncodeSplit(*tt.moved), rev)
			}
			if tt.late != nil {
				workertest.Put(t, fs, pkey, protocol.EncodeProgress(*tt.late), prev)
			}
			if tt.presence != "" {
				if _, _, err := fs.Create(context.Background(), store.Ephemeral, protocol.WorkerKey("dead"), protocol.EncodePresence(protocol.PresenceRecord{Nonce: tt.presence})); err != nil {
					t.Fatal(err)
				}
			}
			if tt.failFence {
				fs.FailGet = pkey
			}
			cand, ok := protocol.Classify(protocol.CandidateInput{Record: tt.view, Me: "me", MyNonce: "n", MaxAttempts: maxAttempts})
			if !ok {
				t.Fatal("not a candidate")
			}
			d := claimSplit(context.Background(), v, claimRequest{Candidate: cand, Record: tt.view, RecordRev: rev, Nonce: v.Nonce, FP: workertest.FP}, 0)
			if d.outcome != tt.wantOut || d.done != tt.wantDone {
				t.Fatalf("outcome %v done %v, want %v done %v", d.outcome, d.done, tt.wantOut, tt.wantDone)
			}
			if f := v.Failure(); (coordination.KindOf(f) == coordination.Fatal) != tt.wantFatal {
				t.Fatalf("failure %v, want Fatal %v", f, tt.wantFatal)
			}
			e, _, _ := fs.Get(context.Background(), store.Durable, key)
			got, err := protocol.DecodeSplit(e.Key, e.Value, fp)
			if err != nil {
				t.Fatal(err)
			}
			base := tt.view
			if tt.moved != nil {
				base = *tt.moved
			}
			if want := tt.wantSplit(base); !reflect.DeepEqual(got, want) {
				t.Fatalf("split record %+v\nwant         %+v", got, want)
			}
			pe, _, _ := fs.Get(context.Background(), store.Durable, pkey)
			prog, _ := protocol.DecodeProgress(pe.Key, pe.Value, fp)
			fenced := tt.wantOut == worker.CASLanded && !tt.wantDone && !cand.Quarantine
			if fenced != (prog.Epoch == 3 && prog.Owner == "me") {
				t.Fatalf("progress %+v: fenced %v, want %v", prog, !fenced, fenced)
			}
			if fenced && !reflect.DeepEqual(d.prog.Progress(), tt.wantProg) {
				t.Fatalf("carried %+v, want %+v", d.prog.Progress(), tt.wantProg)
			}
		})
	}
}

// A claim's completion retried alone (docs/protocol.md, "Claim protocol",
// step 3) completes the claim's record as it stands: at the claim's epoch,
// no attempt charged, the progress record untouched. A record that moved
// meanwhile is not written (the usual rules apply to it); an erred write
// is retried, and a retry of one that landed anyway is taken as landed.
func TestARetriedCompletionWritesOnlyTheCompletion(t *testing.T) {
	fp := protocol.Fingerprint("job:v1")
	claim := protocol.SplitRecord{ID: "a", FP: fp, Weight: 1, Epoch: 3, Owner: "me", Nonce: "n", Attempts: 1, Status: protocol.StatusRunnable}
	peer := claim.Claim("peer", "p1", 4, true, 0)
	earlier := claim.Complete(5) // the erred completion, landed
	tests := []struct {
		name      string
		moved     *protocol.SplitRecord // a split record write after the claim's
		cancelled bool                  // the write errs without landing
		wantOut   worker.CASOutcome
		wantRetry bool
		wantSplit protocol.SplitRecord
	}{
		{name: "completed at the claim's epoch", wantOut: worker.CASLanded, wantSplit: claim.Complete(0)},
		{name: "a record that moved is not written", moved: &peer, wantOut: worker.CASFenced, wantSplit: peer},
		{name: "a retry of an erred write that landed is landed", moved: &earlier, wantOut: worker.CASLanded, wantSplit: earlier},
		{name: "an erred write is retried", cancelled: true, wantOut: worker.CASUnconfirmed, wantRetry: true, wantSplit: claim},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := &workertest.FaultyStore{Store: memstore.New(30 * time.Second)}
			st := &gatedUpdate{Store: fs, key: protocol.SplitKey("a"), gate: make(chan struct{})}
			if !tt.cancelled {
				close(st.gate)
			}
			v := workertest.NewEnv(t, st)
			key, pkey := protocol.SplitKey("a"), protocol.ProgressKey("a")
			rev := workertest.Put(t, fs, key, protocol.EncodeSplit(claim), 0)
			done := protocol.FreshProgress("a", fp, "dead", 2, 0).Commit(coordination.SplitProgress{Watermark: 9, Completed: true}, 0)
			prev := workertest.Put(t, fs, pkey, protocol.EncodeProgress(done), 0)
			if tt.moved != nil {
				workertest.Put(t, fs, key, protocol.EncodeSplit(*tt.moved), rev)
			}
			ctx, cancel := context.WithCancel(context.Background())
			if tt.cancelled {
				cancel()
			}
			defer cancel()
			cand := protocol.Candidate{ID: "a", Kind: protocol.KindReleased, Leftover: true}
			d := claimSplit(ctx, v, claimRequest{Candidate: cand, Record: claim, RecordRev: rev, Nonce: "n2", FP: workertest.FP, Complete: true}, 0)
			if d.outcome != tt.wantOut || !d.done || d.retry != tt.wantRetry {
				t.Fatalf("outcome %v done %v retry %v, want %v done retry %v", d.outcome, d.done, d.retry, tt.wantOut, tt.wantRetry)
			}
			e, _, _ := fs.Get(context.Background(), store.Durable, key)
			got, err := protocol.DecodeSplit(key, e.Value, fp)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.wantSplit) {
				t.Fatalf("split record %+v\nwant         %+v", got, tt.wantSplit)
			}
			if e, _, _ := fs.Get(context.Background(), store.Durable, pkey); uint64(e.Revision) != prev {
				t.Fatalf("progress record at revision %d, want untouched at %d", e.Revision, prev)
			}
		})
	}
}
