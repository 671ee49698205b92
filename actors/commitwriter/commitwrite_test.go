package commitwriter

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

// A lost commit CAS whose progress record still carries this tenancy is
// adopted and retried once; one that already carries the intended write (or
// this tenancy's completion) is a success; a failed classifying read is
// Retryable; a later fence is Fenced.
func TestCasProgressConflicts(t *testing.T) {
	fp := protocol.Fingerprint("job:v1")
	fence := protocol.FreshProgress("a", fp, "me", 2, 0)
	own := fence.Commit(coordination.SplitProgress{Watermark: 5}, 0)
	done := fence.Commit(coordination.SplitProgress{Watermark: 5, Completed: true}, 0)
	later := own.Fence("peer", 3, 0)
	tests := []struct {
		name    string
		moved   protocol.ProgressRecord // what lands after the writer's view
		p       coordination.SplitProgress
		failGet bool
		want    worker.CASOutcome
		adopted bool
	}{
		{"own maybe-landed write: adopt and retry", own, coordination.SplitProgress{Watermark: 9}, false, worker.CASLanded, false},
		{"the intended write already landed", own, coordination.SplitProgress{Watermark: 5}, false, worker.CASLanded, true},
		{"this tenancy's completion already landed", done, coordination.SplitProgress{Watermark: 9}, false, worker.CASLanded, true},
		{"adopted record re-checks the watermark", own, coordination.SplitProgress{Watermark: 4}, false, worker.CASFatal, false},
		{"a failed read is retryable", own, coordination.SplitProgress{Watermark: 9}, true, worker.CASUnconfirmed, false},
		{"a later fence is a fence", later, coordination.SplitProgress{Watermark: 9}, false, worker.CASFenced, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := &workertest.FaultyStore{Store: memstore.New(30 * time.Second)}
			v := workertest.NewEnv(t, fs)
			key := protocol.ProgressKey("a")
			rev := workertest.Put(t, fs, key, protocol.EncodeProgress(fence), 0)
			workertest.Put(t, fs, key, protocol.EncodeProgress(tt.moved), rev)
			if tt.failGet {
				fs.FailGet = key
			}
			d := casProgress(context.Background(), v, "a", &progressCell{fp: workertest.FP, epoch: 2, prog: fence, rev: rev}, tt.p, nil)
			if d.Outcome != tt.want || d.Adopted != tt.adopted {
				t.Fatalf("outcome %v adopted %v (err %v), want %v adopted %v", d.Outcome, d.Adopted, d.Err, tt.want, tt.adopted)
			}
			switch tt.want {
			case worker.CASUnconfirmed:
				if coordination.KindOf(d.Err) != coordination.Retryable {
					t.Fatalf("err %v", d.Err)
				}
			case worker.CASFenced:
				if coordination.KindOf(d.Err) != coordination.Fenced || !strings.Contains(d.Err.Error(), "another worker owns it now; nothing was written") {
					t.Fatalf("err %v", d.Err)
				}
			}
		})
	}
}

// A commit that finds its progress record deleted outside the library
// recreates it with the commit it meant to write (docs/protocol.md,
// "Missing records"); one that finds the record below the revision the
// tenancy already saw is Fatal (docs/protocol.md, "Store rollback").
func TestCasProgressMissingAndRolledBack(t *testing.T) {
	fp := protocol.Fingerprint("job:v1")
	fence := protocol.FreshProgress("a", fp, "me", 2, 0)
	key := protocol.ProgressKey("a")
	held := protocol.SplitRecord{ID: "a", FP: fp, Weight: 1, Epoch: 2, Owner: "me", Nonce: "n", Status: protocol.StatusRunnable}
	t.Run("deleted: recreated", func(t *testing.T) {
		st := memstore.New(30 * time.Second)
		v := workertest.NewEnv(t, st)
		workertest.Put(t, st, protocol.SplitKey("a"), protocol.EncodeSplit(held), 0)
		rev := workertest.Put(t, st, key, protocol.EncodeProgress(fence), 0)
		if _, err := st.Delete(context.Background(), store.Durable, key, 0); err != nil {
			t.Fatal(err)
		}
		d := casProgress(context.Background(), v, "a", &progressCell{fp: workertest.FP, epoch: 2, prog: fence, rev: rev}, coordination.SplitProgress{Watermark: 4}, nil)
		if d.Outcome != worker.CASLanded || d.Rec.Watermark == nil || *d.Rec.Watermark != 4 {
			t.Fatalf("outcome %v record %+v (err %v), want landed at watermark 4", d.Outcome, d.Rec, d.Err)
		}
		e, found, err := st.Get(context.Background(), store.Durable, key)
		if err != nil || !found || e.Revision != store.Revision(d.Rev) {
			t.Fatalf("stored %v %v %v, want the recreated record at revision %d", e, found, err, d.Rev)
		}
	})
	// A rolled-back store lost the progress record with the claim: the
	// split record is below the tenancy's epoch. Recreating the progress
	// record at this epoch would fence every claim of the restored record;
	// the commit is Fatal naming the rollback instead, and writes nothing.
	// A split record of a later tenancy (or none) fences the commit.
	for _, c := range []struct {
		name  string
		split *protocol.SplitRecord
		want  worker.CASOutcome
		says  string
	}{
		{"deleted after a rollback: Fatal, not recreated", &protocol.SplitRecord{ID: "a", FP: fp, Weight: 1, Epoch: 0, Status: protocol.StatusRunnable}, worker.CASFatal, "store rollback: durable key job.split.a is at epoch 0, below epoch 2"},
		{"deleted under a later tenancy: fenced, not recreated", &protocol.SplitRecord{ID: "a", FP: fp, Weight: 1, Epoch: 3, Owner: "peer", Nonce: "p", Status: protocol.StatusRunnable}, worker.CASFenced, "another worker owns it"},
		{"deleted with its split record: fenced, not recreated", nil, worker.CASFenced, "another worker owns it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := memstore.New(30 * time.Second)
			v := workertest.NewEnv(t, st)
			if c.split != nil {
				workertest.Put(t, st, protocol.SplitKey("a"), protocol.EncodeSplit(*c.split), 0)
			}
			rev := workertest.Put(t, st, key, protocol.EncodeProgress(fence), 0)
			if _, err := st.Delete(context.Background(), store.Durable, key, 0); err != nil {
				t.Fatal(err)
			}
			d := casProgress(context.Background(), v, "a", &progressCell{fp: workertest.FP, epoch: 2, prog: fence, rev: rev}, coordination.SplitProgress{Watermark: 4}, nil)
			if d.Outcome != c.want || d.Err == nil || !strings.Contains(d.Err.Error(), c.says) {
				t.Fatalf("outcome %v err %v, want %v saying %q", d.Outcome, d.Err, c.want, c.says)
			}
			if _, found, err := st.Get(context.Background(), store.Durable, key); err != nil || found {
				t.Fatalf("the progress record after the commit: found %v (%v), want none", found, err)
			}
		})
	}
	t.Run("below a seen revision: Fatal", func(t *testing.T) {
		st := memstore.New(30 * time.Second)
		v := workertest.NewEnv(t, st)
		rev := workertest.Put(t, st, key, protocol.EncodeProgress(fence), 0)
		d := casProgress(context.Background(), v, "a", &progressCell{fp: workertest.FP, epoch: 2, prog: fence, rev: rev + 10}, coordination.SplitProgress{Watermark: 4}, nil)
		if d.Outcome != worker.CASFatal || !strings.Contains(d.Err.Error(), "store rollback") {
			t.Fatalf("outcome %v err %v, want Fatal store rollback", d.Outcome, d.Err)
		}
	})
}

func wm(n int64) *int64 { return &n }

func TestClassifyProgressConflict(t *testing.T) {
	base := protocol.ProgressRecord{ID: "s", Epoch: 2, Owner: "me", Watermark: wm(5), State: []byte{}}
	intended := base
	intended.Watermark = wm(9)
	other := base
	other.Owner = "peer"
	higher := base
	higher.Epoch, higher.Owner = 3, "peer"
	done := base
	done.Completed = true
	tests := []struct {
		name  string
		found bool
		got   protocol.ProgressRecord
		want  worker.ConflictClass
	}{
		{"absent is a fence", false, protocol.ProgressRecord{}, worker.ConflictFenced},
		{"the intended write landed", true, intended, worker.ConflictLanded},
		{"this tenancy's completion landed", true, done, worker.ConflictLanded},
		{"own earlier write: adopt", true, base, worker.ConflictAdopt},
		{"another owner", true, other, worker.ConflictFenced},
		{"a later fence", true, higher, worker.ConflictFenced},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classifyProgressConflict("me", 2, intended, tt.found, tt.got); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCheckWatermark(t *testing.T) {
	rec := protocol.ProgressRecord{Watermark: wm(57)}
	if err := checkWatermark("s-7", rec, coordination.SplitProgress{Watermark: 57}); err != nil {
		t.Fatalf("equal watermark: %v", err)
	}
	err := checkWatermark("s-7", rec, coordination.SplitProgress{Watermark: 40})
	want := "coordination error (fatal): split s-7: commit watermark 40 is below the committed watermark 57; a source must never move a watermark backwards"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	if err := checkWatermark("s", protocol.ProgressRecord{}, coordination.SplitProgress{Watermark: -3}); err != nil {
		t.Fatalf("null watermark: %v", err)
	}
}
