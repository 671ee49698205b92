package actors

import (
	"bytes"
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// Runtime splits (docs/protocol.md, "Runtime split") through whole workers.

// readProgress returns split id's progress record and revision.
func readProgress(tb testing.TB, st store.Store, id coordination.SplitID) (protocol.ProgressRecord, uint64) {
	tb.Helper()
	e, found, err := st.Get(context.Background(), store.Durable, protocol.ProgressKey(id))
	if err != nil || !found {
		tb.Fatalf("progress of %s: found %v, %v", id, found, err)
	}
	rec, err := protocol.DecodeProgress(e.Key, e.Value, protocol.Fingerprint("job:v1"))
	if err != nil {
		tb.Fatal(err)
	}
	return rec, uint64(e.Revision)
}

// readResidual returns the residual split record id, and whether both it
// and its spec exist.
func readResidual(tb testing.TB, st store.Store, id coordination.SplitID) (protocol.SplitRecord, bool) {
	tb.Helper()
	ctx := context.Background()
	_, specFound, err := st.Get(ctx, store.Durable, protocol.SpecKey(id))
	if err != nil {
		tb.Fatal(err)
	}
	e, found, err := st.Get(ctx, store.Durable, protocol.SplitKey(id))
	if err != nil {
		tb.Fatal(err)
	}
	if !found || !specFound {
		return protocol.SplitRecord{}, false
	}
	rec, err := protocol.DecodeSplit(e.Key, e.Value, protocol.Fingerprint("job:v1"))
	if err != nil {
		tb.Fatal(err)
	}
	return rec, true
}

// TestACutLandedBeforeACrashIsRolledForward: the owner's cut commit landed
// (step 2) and it crashed before creating the residual (step 3); the next
// claimant of the split creates the residual before its Gained, and its
// Gained carries the primary's descriptor and the committed progress.
func TestACutLandedBeforeACrashIsRolledForward(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		p := workertest.FinalPlan("a")
		w1 := r.start("w1", p)
		r.until("w1 holds a", 10*time.Second, []*member{w1}, func() bool { _, ok := w1.held["a"]; return ok })
		rec, rev := readProgress(t, r.st, "a")
		cut, _ := rec.NextCut([]byte("rest"), 3)
		landed := rec.CommitCut(coordination.SplitProgress{Watermark: 40}, []byte("primary"), cut, 0)
		workertest.Put(t, r.st, protocol.ProgressKey("a"), protocol.EncodeProgress(landed), rev)
		w1.c.Abort()

		w2 := r.start("w2", p)
		r.until("w2 holds a", 20*time.Second, []*member{w2}, func() bool { _, ok := w2.held["a"]; return ok })
		g := w2.held["a"]
		if !bytes.Equal(g.Split.Descriptor, []byte("primary")) || g.Progress == nil || g.Progress.Watermark != 40 {
			t.Fatalf("Gained %+v: want the primary's descriptor at watermark 40", g)
		}
		res, ok := readResidual(t, r.st, protocol.ResidualID("a", 1, 1))
		if !ok || res.Parent != "a" || res.Weight != 3 {
			t.Fatalf("residual %+v (exists %v), want a residual of a of weight 3", res, ok)
		}
		if err := w2.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}
