package actors

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// Appendix A 13: a conflict caused by this worker's own maybe-landed write is
// adopted, not reported as Fenced.
func TestMaybeLandedCommitIsAdopted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		fs := &workertest.FaultyStore{Store: r.st}
		w := r.startOn(fs, "w1", workertest.FinalPlan("a"))
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		fs.Mu.Lock()
		fs.LandThenErr = protocol.ProgressKey("a")
		fs.Mu.Unlock()
		if err := w.c.Commit("a", coordination.SplitProgress{Watermark: 5}); coordination.KindOf(err) != coordination.Retryable {
			t.Fatalf("maybe-landed commit: %v", err)
		}
		// The same progress again: the record already carries it (§18.1 a).
		if err := w.c.Commit("a", coordination.SplitProgress{Watermark: 5}); err != nil {
			t.Fatalf("re-commit of the landed progress: %v", err)
		}
		fs.Mu.Lock()
		fs.LandThenErr = protocol.ProgressKey("a")
		fs.Mu.Unlock()
		if err := w.c.Commit("a", coordination.SplitProgress{Watermark: 7}); coordination.KindOf(err) != coordination.Retryable {
			t.Fatalf("second maybe-landed commit: %v", err)
		}
		// Further progress: the stale CAS loses, the record still names this
		// worker at its epoch, so it is adopted and retried once (§18.2 b).
		if err := w.c.Commit("a", coordination.SplitProgress{Watermark: 9}); err != nil {
			t.Fatalf("commit after a maybe-landed one: %v", err)
		}
		w.pump(t)
		if _, ok := hasEvent[coordination.Lost](w); ok {
			t.Fatalf("Lost after an own write: %v", w.evs)
		}
		e, _, _ := r.st.Get(context.Background(), store.Durable, protocol.ProgressKey("a"))
		rec, err := protocol.DecodeProgress(e.Key, e.Value, protocol.Fingerprint("job:v1"))
		if err != nil || rec.Watermark == nil || *rec.Watermark != 9 {
			t.Fatalf("record %+v, %v", rec, err)
		}
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

// Appendix A 15: CommitFinal returns one result per entry in order, and
// entries for the same split apply in entry order.
func TestCommitFinalOneResultPerEntryInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", workertest.FinalPlan("a", "b"))
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 2 })
		errs := w.c.CommitFinal([]coordination.Commit{
			{Split: "a", Progress: coordination.SplitProgress{Watermark: 3}},
			{Split: "zz", Progress: coordination.SplitProgress{Watermark: 1}},
			{Split: "a", Progress: coordination.SplitProgress{Watermark: 4}},
			{Split: "b", Progress: coordination.SplitProgress{Watermark: 8, Completed: true}},
		})
		if len(errs) != 4 || errs[0] != nil || coordination.KindOf(errs[1]) != coordination.Fenced || errs[2] != nil || errs[3] != nil {
			t.Fatalf("results %v", errs)
		}
		e, _, _ := r.st.Get(context.Background(), store.Durable, protocol.ProgressKey("a"))
		rec, _ := protocol.DecodeProgress(e.Key, e.Value, protocol.Fingerprint("job:v1"))
		if rec.Watermark == nil || *rec.Watermark != 4 {
			t.Fatalf("same-split entries out of order: %+v", rec)
		}
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

// A call refers to the tenancy whose Gained Poll last returned: a commit
// for a split re-claimed behind the driver's back (its Gained unpolled)
// writes nothing and is Fenced; after the Poll it lands.
func TestCommitBindsToThePolledTenancy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", workertest.FinalPlan("a"))
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		if err := w.c.Commit("a", coordination.SplitProgress{Watermark: 5}); err != nil {
			t.Fatal(err)
		}
		if err := w.c.Release("a"); err != nil {
			t.Fatal(err)
		}
		record := func() protocol.ProgressRecord {
			e, _, _ := r.st.Get(context.Background(), store.Durable, protocol.ProgressKey("a"))
			rec, err := protocol.DecodeProgress(e.Key, e.Value, protocol.Fingerprint("job:v1"))
			if err != nil {
				t.Fatal(err)
			}
			return rec
		}
		// Re-claimed (epoch 2) while the driver does not poll.
		for i := 0; i < 80 && record().Epoch != 2; i++ {
			r.advance(125 * time.Millisecond)
		}
		if rec := record(); rec.Epoch != 2 || rec.Owner != "w1" {
			t.Fatalf("not re-claimed: %+v", rec)
		}
		err := w.c.Commit("a", coordination.SplitProgress{Watermark: 6})
		if coordination.KindOf(err) != coordination.Fenced || err.(*coordination.Error).Reason != "split a: not held here; nothing was written" {
			t.Fatalf("commit onto the unpolled tenancy: %v", err)
		}
		if errs := w.c.CommitFinal([]coordination.Commit{{Split: "a", Progress: coordination.SplitProgress{Watermark: 6}}}); coordination.KindOf(errs[0]) != coordination.Fenced {
			t.Fatalf("final commit onto the unpolled tenancy: %v", errs)
		}
		if err := w.c.Release("a"); err != nil {
			t.Fatal(err)
		}
		if rec := record(); *rec.Watermark != 5 || rec.Owner != "w1" {
			t.Fatalf("something was written: %+v", rec)
		}
		// The fence landing in the store does not mean the Gained is queued
		// yet: poll until it is.
		r.until("the re-claim's Gained", 5*time.Second, []*member{w}, func() bool { return w.held["a"].Epoch == 2 })
		if g := w.held["a"]; g.Epoch != 2 || g.Progress == nil || g.Progress.Watermark != 5 {
			t.Fatalf("gained %+v", g)
		}
		if err := w.c.Commit("a", coordination.SplitProgress{Watermark: 6}); err != nil {
			t.Fatalf("commit after the poll: %v", err)
		}
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}
