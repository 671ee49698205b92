package actors

import (
	"bytes"
	"context"
	"math"
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

// specGeneration returns the generation of split id's spec record.
func specGeneration(tb testing.TB, st store.Store, id coordination.SplitID) uint64 {
	tb.Helper()
	e, found, err := st.Get(context.Background(), store.Durable, protocol.SpecKey(id))
	if err != nil || !found {
		tb.Fatalf("spec of %s: found %v, %v", id, found, err)
	}
	s, err := protocol.DecodeSpec(e.Key, e.Value, protocol.Fingerprint("job:v1"))
	if err != nil {
		tb.Fatal(err)
	}
	return s.Generation
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

// TestCommitCutThroughTheHandle: a worker cuts a held split through
// CommitCut (a completed progress is refused, Fatal, writing nothing), the
// residual is placed and claimed with its own descriptor, and the job ends
// AllComplete only once the residual completed too.
func TestCommitCutThroughTheHandle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", workertest.FinalPlan("a"))
		r.until("w1 holds a", 10*time.Second, []*member{w}, func() bool { _, ok := w.held["a"]; return ok })
		cut := coordination.Cut{Primary: []byte("head"), Residual: []byte("tail"), ResidualWeight: 2}
		if _, err := w.c.CommitCut("a", coordination.SplitProgress{Watermark: 5, Completed: true}, cut); coordination.KindOf(err) != coordination.Fatal {
			t.Fatalf("a completing cut commit: %v, want Fatal", err)
		}
		if rec, _ := readProgress(t, r.st, "a"); rec.Cut != nil || rec.Completed {
			t.Fatalf("the refused cut wrote %+v", rec)
		}
		rid, err := w.c.CommitCut("a", coordination.SplitProgress{Watermark: 5}, cut)
		if err != nil || rid != protocol.ResidualID("a", 1, 1) {
			t.Fatalf("CommitCut: %q, %v; want %s", rid, err, protocol.ResidualID("a", 1, 1))
		}
		r.until("w1 holds the residual", 10*time.Second, []*member{w}, func() bool { _, ok := w.held[rid]; return ok })
		if got, want := specGeneration(t, r.st, rid), specGeneration(t, r.st, "a"); got != want || want == 0 {
			t.Fatalf("the residual's spec has generation %d, its parent's %d: every writer of it must write the same bytes", got, want)
		}
		if g := w.held[rid]; !bytes.Equal(g.Split.Descriptor, []byte("tail")) || g.Split.Weight != 2 || g.Progress != nil {
			t.Fatalf("the residual's Gained %+v, want descriptor tail, weight 2, no progress", g)
		}
		if err := w.c.Commit("a", coordination.SplitProgress{Watermark: 9, Completed: true}); err != nil {
			t.Fatal(err)
		}
		r.advance(time.Second)
		w.pump(t)
		if v := verdictOf(w); v != nil {
			t.Fatalf("verdict %T with the residual still running", v)
		}
		if err := w.c.Commit(rid, coordination.SplitProgress{Watermark: 3, Completed: true}); err != nil {
			t.Fatal(err)
		}
		r.until("AllComplete", 10*time.Second, []*member{w}, func() bool { _, ok := verdictOf(w).(coordination.AllComplete); return ok })
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestAnIdleFleetCutsTheLargeSplit runs a runtime split through whole
// workers: w1 holds the job's one split and reports much remaining work,
// w2 is idle; the leader asks w1 for a cut, w1's driver is handed a
// CutRequested for that tenancy, its CommitCut creates the residual, and
// the residual is placed and claimed with its own descriptor. (That a
// request is handed over at most once per interval is TestCutAskedGate's:
// here the leader may rightly ask for a second cut.)
func TestAnIdleFleetCutsTheLargeSplit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		p := workertest.FinalPlan("a")
		w1 := r.start("w1", p)
		r.until("w1 holds a", 10*time.Second, []*member{w1}, func() bool { _, ok := w1.held["a"]; return ok })
		w2 := r.start("w2", p)
		g := w1.held["a"]
		var req coordination.CutRequested
		r.until("w1 is asked to cut a", 20*time.Second, []*member{w1, w2}, func() bool {
			w1.c.ReportRemaining("a", g.Epoch, 1000)
			var ok bool
			req, ok = hasEvent[coordination.CutRequested](w1)
			return ok
		})
		// 15 lanes idle: the leader asks for the split in equal parts.
		if req.Split != "a" || req.Epoch != g.Epoch || req.Cuts() < 2 || req.Keep != 1/float64(req.Cuts()+1) && math.Abs(req.Keep-1/float64(req.Cuts()+1)) > 1e-6 {
			t.Fatalf("request %+v, want one for tenancy (a, %d) in equal parts", req, g.Epoch)
		}
		rid, err := w1.c.CommitCut("a", coordination.SplitProgress{Watermark: 1}, coordination.Cut{Primary: []byte("head"), Residual: []byte("tail"), ResidualWeight: uint64(1000 * (1 - req.Keep))})
		if err != nil {
			t.Fatal(err)
		}
		both := []*member{w1, w2}
		r.until("the residual is held", 20*time.Second, both, func() bool {
			_, on1 := w1.held[rid]
			_, on2 := w2.held[rid]
			return on1 || on2
		})
		res, ok := w2.held[rid]
		if !ok {
			res = w1.held[rid]
		}
		if !bytes.Equal(res.Split.Descriptor, []byte("tail")) {
			t.Fatalf("the residual's Gained %+v, want descriptor tail", res)
		}
		for _, m := range both {
			if err := m.c.Depart(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
