package splitwriter

import (
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

// TestCasSplitConflicts runs a hand-back by tenancy 2 of "me" (session n)
// against a split record that moved after the writer's view.
func TestCasSplitConflicts(t *testing.T) {
	fp := protocol.Fingerprint("job:v1")
	mine := protocol.SplitRecord{ID: "a", FP: fp, Weight: 1, Epoch: 2, Status: protocol.StatusRunnable, Owner: "me", Nonce: "n", Attempts: 1}
	handBack := func(r protocol.SplitRecord) protocol.SplitRecord { return r.HandBack(0) }
	moved := mine
	moved.WrittenAtMs = 7 // an own write landed unseen: still this tenancy's
	peer := mine
	peer.Epoch, peer.Owner, peer.Nonce = 3, "peer", "p"
	tests := []struct {
		name       string
		moved      *protocol.SplitRecord // what lands after the writer's view; nil: nothing
		corrupt    bool                  // the record read after the lost compare is not a split record
		deleted    bool
		failGet    bool
		landErr    bool // the write lands but its reply is an error
		want       worker.CASOutcome
		adopted    bool
		fencedText bool
	}{
		{name: "no conflict", want: worker.CASLanded},
		{name: "own maybe-landed write: adopt and retry", moved: &moved, want: worker.CASLanded},
		{name: "the intended write already landed", moved: workertest.Ptr(mine.HandBack(0)), want: worker.CASLanded, adopted: true},
		{name: "a peer's claim fences it", moved: &peer, want: worker.CASFenced, fencedText: true},
		{name: "a deleted record fences it", deleted: true, want: worker.CASFenced, fencedText: true},
		{name: "a failed read is unconfirmed", moved: &moved, failGet: true, want: worker.CASUnconfirmed},
		{name: "a lost reply is unconfirmed", landErr: true, want: worker.CASUnconfirmed},
		{name: "a corrupt record is Fatal", corrupt: true, want: worker.CASFatal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := &workertest.FaultyStore{Store: memstore.New(30 * time.Second)}
			v := workertest.NewEnv(t, fs)
			key := protocol.SplitKey("a")
			rev := workertest.Put(t, fs, key, protocol.EncodeSplit(mine), 0)
			base := worker.SplitEntry{Rec: mine, Rev: rev}
			switch {
			case tt.moved != nil:
				workertest.Put(t, fs, key, protocol.EncodeSplit(*tt.moved), rev)
			case tt.corrupt:
				workertest.Put(t, fs, key, []byte(`{"not":"a split"}`), rev)
			case tt.deleted:
				if _, err := fs.Delete(context.Background(), store.Durable, key, 0); err != nil {
					t.Fatal(err)
				}
			}
			if tt.failGet {
				fs.FailGet = key
			}
			if tt.landErr {
				fs.LandThenErr = key
			}
			d := casSplit(context.Background(), v, workertest.FP, "a", 2, "handing back", base, handBack)
			if d.Outcome != tt.want || d.Adopted != tt.adopted {
				t.Fatalf("outcome %v adopted %v (err %v), want %v adopted %v", d.Outcome, d.Adopted, d.Err, tt.want, tt.adopted)
			}
			if tt.fencedText && (coordination.KindOf(d.Err) != coordination.Fenced || !strings.Contains(d.Err.Error(), "split a: another worker owns it now")) {
				t.Fatalf("err %v", d.Err)
			}
			if tt.want == worker.CASUnconfirmed && (coordination.KindOf(d.Err) != coordination.Retryable || !strings.Contains(d.Err.Error(), "handing back split a")) {
				t.Fatalf("err %v", d.Err)
			}
		})
	}
}

// TestEndTenancy checks the hand-back or completion of a surrendered split
// writes only on a record that still names the tenancy.
func TestEndTenancy(t *testing.T) {
	fp := protocol.Fingerprint("job:v1")
	mine := protocol.SplitRecord{ID: "a", FP: fp, Weight: 1, Epoch: 2, Status: protocol.StatusRunnable, Owner: "me", Nonce: "n"}
	done := mine
	done.Status = protocol.StatusCompleted
	peer := mine
	peer.Owner, peer.Nonce = "peer", "p"
	handBack := func(r protocol.SplitRecord) protocol.SplitRecord { return r.HandBack(0) }
	complete := func(r protocol.SplitRecord) protocol.SplitRecord { return r.Complete(0) }
	tests := []struct {
		name   string
		rec    protocol.SplitRecord
		end    func(protocol.SplitRecord) protocol.SplitRecord
		want   worker.CASOutcome
		status protocol.Status // the stored record's status afterwards
	}{
		{"hand-back", mine, handBack, worker.CASLanded, protocol.StatusRunnable},
		{"completion", mine, complete, worker.CASLanded, protocol.StatusCompleted},
		{"another owner: nothing written", peer, handBack, worker.CASFenced, protocol.StatusRunnable},
		{"already terminal: nothing left to write", done, complete, worker.CASLanded, protocol.StatusCompleted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := memstore.New(30 * time.Second)
			v := workertest.NewEnv(t, st)
			key := protocol.SplitKey("a")
			rev := workertest.Put(t, st, key, protocol.EncodeSplit(tt.rec), 0)
			d := endTenancy(context.Background(), v, workertest.FP, "a", 2, "ending", worker.SplitEntry{Rec: tt.rec, Rev: rev}, tt.end)
			if d.Outcome != tt.want {
				t.Fatalf("outcome %v (err %v), want %v", d.Outcome, d.Err, tt.want)
			}
			e, _, err := st.Get(context.Background(), store.Durable, key)
			if err != nil {
				t.Fatal(err)
			}
			got, err := protocol.DecodeSplit(key, e.Value, fp)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tt.status {
				t.Fatalf("status %v, want %v", got.Status, tt.status)
			}
			if tt.name == "hand-back" && got.Owner != "" {
				t.Fatalf("owner %q after the hand-back", got.Owner)
			}
		})
	}
}
