package commitwriter

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// cutRig is one commit-writer shard holding tenancy (a, 2) of worker "me"
// on a FaultyStore, its spec at generation 5; the shard's turn is taken by
// the test's calls (no goroutine runs it). Its peers (root, revoke) are one
// recorder.
type cutRig struct {
	w    *commitWriter
	fs   *workertest.FaultyStore
	v    *worker.Env
	sent func() []any
}

var fpJob = protocol.Fingerprint("job:v1")

func newCutRig(t *testing.T) *cutRig {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var msgs []any
	rec := e.Spawn(func() actor.Receiver { return workertest.Recorder{Mu: &mu, Msgs: &msgs} }, "rec")
	fs := &workertest.FaultyStore{Store: memstore.New(30 * time.Second)}
	v := workertest.NewEnv(t, fs)
	v.Engine = e
	v.Ctx, v.Cancel = context.WithCancel(context.Background())
	v.PIDs = worker.PIDs{Root: rec, Revoke: rec, SplitWriter: rec}
	ws := New(v)
	v.Commits = ws
	t.Cleanup(func() {
		v.Cancel()
		<-e.Poison(rec).Done()
	})
	workertest.Put(t, fs, protocol.SpecKey("a"), protocol.EncodeSpec(protocol.NewSpec(coordination.SplitSpec{ID: "a", Descriptor: []byte("whole"), Weight: 9}, fpJob, 5)), 0)
	fence := protocol.FreshProgress("a", fpJob, "me", 2, 0)
	rev := workertest.Put(t, fs, protocol.ProgressKey("a"), protocol.EncodeProgress(fence), 0)
	w := ws.of("a")
	w.receive(worker.CellChanged{Split: "a", Epoch: 2, FP: workertest.FP, Prog: fence, Rev: rev, Generation: 5})
	return &cutRig{w: w, fs: fs, v: v, sent: func() []any {
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(msgs)
	}}
}

func (r *cutRig) cut(wm int64, primary, residual string, weight uint64) CommitResult {
	c := coordination.Cut{Primary: []byte(primary), Residual: []byte(residual), ResidualWeight: weight}
	return r.w.ask(CommitRequest{Ctx: context.Background(), Split: "a", Epoch: 2, Progress: coordination.SplitProgress{Watermark: wm}, Cut: &c})
}

func (r *cutRig) commit(p coordination.SplitProgress) CommitResult {
	return r.w.ask(CommitRequest{Ctx: context.Background(), Split: "a", Epoch: 2, Progress: p})
}

func (r *cutRig) progress(t *testing.T) protocol.ProgressRecord {
	t.Helper()
	e, _, err := r.fs.Get(context.Background(), store.Durable, protocol.ProgressKey("a"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := protocol.DecodeProgress(e.Key, e.Value, fpJob)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// exists reports whether key (durable) exists.
func (r *cutRig) exists(t *testing.T, key string) bool {
	t.Helper()
	_, found, err := r.fs.Get(context.Background(), store.Durable, key)
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// residual checks that cut counter of tenancy (a, 2) is confirmed in the
// store: its spec (generation 5, weight, descriptor) and its split record
// (fresh, runnable, parent a).
func (r *cutRig) residual(t *testing.T, counter uint64, descriptor string, weight uint64) {
	t.Helper()
	id := protocol.ResidualID("a", 2, counter)
	ctx := context.Background()
	se, found, err := r.fs.Get(ctx, store.Durable, protocol.SpecKey(id))
	if err != nil || !found {
		t.Fatalf("residual spec %s: found %v, %v", id, found, err)
	}
	spec, err := protocol.DecodeSpec(se.Key, se.Value, fpJob)
	if err != nil || spec.Generation != 5 || spec.Weight != weight || string(spec.Descriptor) != descriptor {
		t.Fatalf("residual spec %+v (%v), want generation 5, weight %d, descriptor %q", spec, err, weight, descriptor)
	}
	re, found, err := r.fs.Get(ctx, store.Durable, protocol.SplitKey(id))
	if err != nil || !found {
		t.Fatalf("residual split record %s: found %v, %v", id, found, err)
	}
	rec, err := protocol.DecodeSplit(re.Key, re.Value, fpJob)
	if err != nil || rec.Parent != "a" || rec.Epoch != 0 || rec.Status != protocol.StatusRunnable || rec.Owner != "" || rec.Weight != weight {
		t.Fatalf("residual split record %+v (%v), want a fresh runnable record of parent a", rec, err)
	}
}

// TestACutCommitLandsThenItsResidual: a cut commit writes the progress
// with the primary and the cut at the tenancy's epoch, then the residual's
// spec and split record, and returns the residual's id; the next cut of the
// tenancy is numbered 2; a later commit copies the latest cut.
func TestACutCommitLandsThenItsResidual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCutRig(t)
		res := r.cut(10, "p1", "r1", 4)
		if res.Err != nil || res.Residual != "_a_2_1" {
			t.Fatalf("first cut: %q, %v; want _a_2_1", res.Residual, res.Err)
		}
		rec := r.progress(t)
		if string(rec.Descriptor) != "p1" || rec.Cut == nil || rec.Cut.ID != "_a_2_1" || rec.Cut.Epoch != 2 || rec.Cut.Counter != 1 ||
			rec.Cut.Weight != 4 || string(rec.Cut.Descriptor) != "r1" || *rec.Watermark != 10 {
			t.Fatalf("progress %+v cut %+v, want primary p1 and cut 1 at epoch 2", rec, rec.Cut)
		}
		r.residual(t, 1, "r1", 4)
		// A retry of a cut that succeeded (its reply lost to the caller's
		// deadline) is the same cut: no second residual.
		if res := r.cut(12, "p1", "r1", 4); res.Err != nil || res.Residual != "_a_2_1" {
			t.Fatalf("the first cut again: %q, %v; want _a_2_1", res.Residual, res.Err)
		}
		if rec := r.progress(t); rec.Cut.Counter != 1 || *rec.Watermark != 12 || r.exists(t, protocol.SpecKey("_a_2_2")) {
			t.Fatalf("progress %+v cut %+v: want cut 1 at watermark 12 and no second residual", rec, rec.Cut)
		}
		if res := r.cut(20, "p2", "r2", 2); res.Err != nil || res.Residual != "_a_2_2" {
			t.Fatalf("second cut: %q, %v; want _a_2_2", res.Residual, res.Err)
		}
		r.residual(t, 2, "r2", 2)
		if res := r.commit(coordination.SplitProgress{Watermark: 30}); res.Err != nil {
			t.Fatal(res.Err)
		}
		if rec := r.progress(t); string(rec.Descriptor) != "p2" || rec.Cut == nil || rec.Cut.Counter != 2 || *rec.Watermark != 30 {
			t.Fatalf("a commit after the cuts: %+v, want the latest cut copied", rec)
		}
	})
}

// TestALostCutCommitReplyMakesOneResidual: a cut commit whose reply is lost
// after it landed returns Retryable and creates nothing (the residual only
// follows a landing known); its retry, with the same cut and the same or a
// later watermark, is found landed (or adopted and rebased) and creates the
// residual of counter 1, exactly one.
func TestALostCutCommitReplyMakesOneResidual(t *testing.T) {
	for _, retryWm := range []int64{10, 11} {
		synctest.Test(t, func(t *testing.T) {
			r := newCutRig(t)
			r.fs.LandThenErr = protocol.ProgressKey("a")
			res := r.cut(10, "p1", "r1", 4)
			if coordination.KindOf(res.Err) != coordination.Retryable || res.Residual != "" {
				t.Fatalf("lost reply: %q, %v; want Retryable", res.Residual, res.Err)
			}
			if r.exists(t, protocol.SpecKey("_a_2_1")) || r.exists(t, protocol.SplitKey("_a_2_1")) {
				t.Fatal("a residual record was created before the cut commit was known to have landed")
			}
			if res := r.cut(retryWm, "p1", "r1", 4); res.Err != nil || res.Residual != "_a_2_1" {
				t.Fatalf("retry at watermark %d: %q, %v; want _a_2_1", retryWm, res.Residual, res.Err)
			}
			r.residual(t, 1, "r1", 4)
			if rec := r.progress(t); rec.Cut.Counter != 1 || *rec.Watermark != retryWm {
				t.Fatalf("progress %+v cut %+v, want cut 1 at watermark %d", rec, rec.Cut, retryWm)
			}
			if r.exists(t, protocol.SpecKey("_a_2_2")) {
				t.Fatal("the retry made a second cut")
			}
		})
	}
}

// TestAFencedCutCommitWritesNothing: the cut commit of a fenced tenancy
// loses its CAS: Fenced, no residual, the later tenancy's record untouched,
// the tenancy ended.
func TestAFencedCutCommitWritesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCutRig(t)
		later := protocol.FreshProgress("a", fpJob, "me", 2, 0).Fence("peer", 3, 0)
		e, _, _ := r.fs.Get(context.Background(), store.Durable, protocol.ProgressKey("a"))
		workertest.Put(t, r.fs, protocol.ProgressKey("a"), protocol.EncodeProgress(later), uint64(e.Revision))
		res := r.cut(10, "p1", "r1", 4)
		if coordination.KindOf(res.Err) != coordination.Fenced || res.Residual != "" {
			t.Fatalf("fenced cut: %q, %v; want Fenced", res.Residual, res.Err)
		}
		if r.exists(t, protocol.SpecKey("_a_2_1")) || r.exists(t, protocol.SplitKey("_a_2_1")) {
			t.Fatal("a fenced cut created a residual record")
		}
		if rec := r.progress(t); rec.Epoch != 3 || rec.Cut != nil || rec.Descriptor != nil {
			t.Fatalf("progress %+v, want the later fence untouched", rec)
		}
		if got := r.sent(); !slices.Contains(got, any(wire.EndTenancy{Split: "a", Epoch: 2, Reason: wire.EndFenced})) {
			t.Fatalf("told %#v, want EndTenancy fenced", got)
		}
	})
}

// TestAnUnconfirmedCutIsFinishedByItsRetryOnly: a cut whose residual's
// split record could not be created (the spec was) is durable and
// unconfirmed: another cut is refused, the same cut only creates the
// missing record (no second cut commit).
func TestAnUnconfirmedCutIsFinishedByItsRetryOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCutRig(t)
		r.fs.FailCreate = protocol.SplitKey("_a_2_1")
		res := r.cut(10, "p1", "r1", 4)
		if coordination.KindOf(res.Err) != coordination.Retryable || !res.Landed || res.Residual != "" {
			t.Fatalf("failed create: %q landed %v, %v; want a landed cut and Retryable", res.Residual, res.Landed, res.Err)
		}
		if !r.exists(t, protocol.SpecKey("_a_2_1")) || r.exists(t, protocol.SplitKey("_a_2_1")) {
			t.Fatal("want the spec without the split record")
		}
		res = r.cut(12, "p9", "r9", 1)
		if coordination.KindOf(res.Err) != coordination.Retryable || !strings.Contains(res.Err.Error(), "previous cut of a not yet confirmed") {
			t.Fatalf("another cut while unconfirmed: %q, %v; want the Retryable refusal", res.Residual, res.Err)
		}
		if rec := r.progress(t); rec.Cut.Counter != 1 || *rec.Watermark != 10 {
			t.Fatalf("progress %+v, want the refused cut unwritten", rec)
		}
		if res := r.cut(10, "p1", "r1", 4); res.Err != nil || res.Residual != "_a_2_1" {
			t.Fatalf("the same cut again: %q, %v; want _a_2_1", res.Residual, res.Err)
		}
		r.residual(t, 1, "r1", 4)
	})
}

// TestAForeignRecordUnderTheResidualsKeyIsFatal: a spec under the
// residual's id that is not this cut's is a collision: Fatal naming the
// key, latched, nothing overwritten.
func TestAForeignRecordUnderTheResidualsKeyIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCutRig(t)
		foreign := protocol.NewSpec(coordination.SplitSpec{ID: "_a_2_1", Descriptor: []byte("other"), Weight: 4}, fpJob, 5)
		workertest.Put(t, r.fs, protocol.SpecKey("_a_2_1"), protocol.EncodeSpec(foreign), 0)
		res := r.cut(10, "p1", "r1", 4)
		if coordination.KindOf(res.Err) != coordination.Fatal || !strings.Contains(res.Err.Error(), protocol.SpecKey("_a_2_1")) {
			t.Fatalf("collision: %v; want Fatal naming %s", res.Err, protocol.SpecKey("_a_2_1"))
		}
		if f := r.v.Failure(); coordination.KindOf(f) != coordination.Fatal {
			t.Fatalf("latched %v, want the Fatal", f)
		}
		if r.exists(t, protocol.SplitKey("_a_2_1")) {
			t.Fatal("a split record was created for a colliding spec")
		}
	})
}

// TestACompletingCommitConfirmsThePendingCutFirst: while a cut of the
// tenancy is durable and unconfirmed (its create failed, or the cut
// commit's reply was lost), a completing Commit creates the residual before
// it completes the split; if that fails, the completion is not written.
func TestACompletingCommitConfirmsThePendingCutFirst(t *testing.T) {
	for _, tt := range []struct {
		name string
		lost bool // the cut commit's reply was lost (else its split record's create failed)
	}{{"after a failed create", false}, {"after a lost cut commit reply", true}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newCutRig(t)
				if tt.lost {
					r.fs.LandThenErr = protocol.ProgressKey("a")
				} else {
					r.fs.FailCreate = protocol.SplitKey("_a_2_1")
				}
				if res := r.cut(10, "p1", "r1", 4); coordination.KindOf(res.Err) != coordination.Retryable {
					t.Fatalf("cut: %v, want Retryable", res.Err)
				}
				r.fs.FailCreate = protocol.SplitKey("_a_2_1")
				done := coordination.SplitProgress{Watermark: 15, Completed: true}
				if res := r.commit(done); res.Landed || coordination.KindOf(res.Err) != coordination.Retryable {
					t.Fatalf("completion whose confirmation failed: landed %v, %v; want Retryable", res.Landed, res.Err)
				}
				if r.progress(t).Completed {
					t.Fatal("the split completed before its residual existed")
				}
				if res := r.commit(done); !res.Landed || res.Err != nil {
					t.Fatalf("completion: landed %v, %v", res.Landed, res.Err)
				}
				r.residual(t, 1, "r1", 4)
				if rec := r.progress(t); !rec.Completed || rec.Cut == nil || rec.Cut.Counter != 1 {
					t.Fatalf("progress %+v, want completed with its cut", rec)
				}
			})
		})
	}
}

// TestCutAskedGate is the gate of a leader's cut request on the owner
// (docs/protocol.md, "Runtime split", "Who decides").
func TestCutAskedGate(t *testing.T) {
	now := time.Unix(1000, 0)
	const iv = 10 * time.Second
	fence := protocol.FreshProgress("a", fpJob, "me", 2, 0)
	oneCut := func() protocol.ProgressRecord {
		c, _ := fence.NextCut([]byte("r"), 1)
		return fence.CommitCut(coordination.SplitProgress{Watermark: 1}, []byte("p"), c, 0)
	}()
	ask := worker.CutAsked{Split: "a", Epoch: 2, Counter: 1, KeepPPM: 600000}
	tests := []struct {
		name     string
		m        worker.CutAsked
		cell     *progressCell
		interval time.Duration
		want     bool
	}{
		{"held, first request", ask, &progressCell{fp: workertest.FP, epoch: 2, prog: fence}, iv, true},
		{"not held", ask, nil, iv, false},
		{"another epoch", worker.CutAsked{Split: "a", Epoch: 1, Counter: 1}, &progressCell{fp: workertest.FP, epoch: 2, prog: fence}, iv, false},
		{"counter mismatch", worker.CutAsked{Split: "a", Epoch: 2, Counter: 2}, &progressCell{fp: workertest.FP, epoch: 2, prog: fence}, iv, false},
		{"the cut was made: void", ask, &progressCell{fp: workertest.FP, epoch: 2, prog: oneCut, confirmed: 1}, iv, false},
		{"the next cut after a confirmed one", worker.CutAsked{Split: "a", Epoch: 2, Counter: 2}, &progressCell{fp: workertest.FP, epoch: 2, prog: oneCut, confirmed: 1}, iv, true},
		{"a cut unconfirmed", worker.CutAsked{Split: "a", Epoch: 2, Counter: 2}, &progressCell{fp: workertest.FP, epoch: 2, prog: oneCut}, iv, false},
		{"a cut in flight", ask, &progressCell{fp: workertest.FP, epoch: 2, prog: fence, cutting: true}, iv, false},
		{"within half the interval", ask, &progressCell{fp: workertest.FP, epoch: 2, prog: fence, askedAt: now.Add(-iv/2 + time.Millisecond)}, iv, false},
		{"half the interval after", ask, &progressCell{fp: workertest.FP, epoch: 2, prog: fence, askedAt: now.Add(-iv / 2)}, iv, true},
		{"never cut (interval 0)", ask, &progressCell{fp: workertest.FP, epoch: 2, prog: fence}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judgeCutAsk(tt.m, tt.cell, tt.interval, now); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestACutAskedPostedIsEmittedOncePerHalfInterval: a CutAsked posted to
// the commit writer (as the split writer posts it) becomes one
// CutRequested told to the root (the outbox's one writer), the commit
// writer writing nothing to the outbox itself; the same request again
// within half the CutInterval does not, and after it does.
func TestACutAskedPostedIsEmittedOncePerHalfInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCutRig(t)
		r.v.Config.CutInterval = 10 * time.Second
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); r.w.run(ctx) }()
		defer func() { cancel(); <-done }()
		ask := worker.CutAsked{Split: "a", Epoch: 2, Counter: 1, KeepPPM: 750000}
		seen := 0
		// told returns the CutRequested told to the root since the last
		// call.
		told := func() []any {
			var out []any
			for _, m := range r.sent() {
				if _, ok := m.(wire.CutRequested); ok {
					out = append(out, m)
				}
			}
			out, seen = out[seen:], len(out)
			return out
		}
		want := []any{wire.CutRequested{Event: coordination.CutRequested{Split: "a", Epoch: 2, Keep: 0.75, Parts: 1}}}
		r.v.Commits.Post(ask)
		if got := told(); !slices.Equal(got, want) {
			t.Fatalf("first request: %v, want %v", got, want)
		}
		r.v.Commits.Post(ask)
		r.v.Clock.(*clock.Mock).Add(4 * time.Second)
		r.v.Commits.Post(ask)
		if got := told(); len(got) != 0 {
			t.Fatalf("within half the interval: %v, want nothing", got)
		}
		r.v.Clock.(*clock.Mock).Add(time.Second)
		r.v.Commits.Post(ask)
		if got := told(); !slices.Equal(got, want) {
			t.Fatalf("half the interval after: %v, want %v", got, want)
		}
	})
}

// TestACutAfterAnUnseenCompletionIsFenced: a CommitCut that finds the
// tenancy's completing commit landed (its reply was lost) makes no cut: it
// is Fenced, creates nothing and ends the tenancy as completed.
func TestACutAfterAnUnseenCompletionIsFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCutRig(t)
		r.fs.LandThenErr = protocol.ProgressKey("a")
		if res := r.commit(coordination.SplitProgress{Watermark: 9, Completed: true}); coordination.KindOf(res.Err) != coordination.Retryable {
			t.Fatalf("completion with a lost reply: %v, want Retryable", res.Err)
		}
		res := r.cut(9, "p1", "r1", 4)
		if coordination.KindOf(res.Err) != coordination.Fenced || res.Residual != "" {
			t.Fatalf("cut after the completion: %q, %v; want Fenced", res.Residual, res.Err)
		}
		if r.exists(t, protocol.SpecKey("_a_2_1")) {
			t.Fatal("a residual was created for a completed split")
		}
		if rec := r.progress(t); !rec.Completed || rec.Cut != nil {
			t.Fatalf("progress %+v, want the completion without a cut", rec)
		}
		if got := r.sent(); !slices.Contains(got, any(wire.EndTenancy{Split: "a", Epoch: 2, Reason: wire.EndCompleted})) {
			t.Fatalf("told %#v, want EndTenancy completed", got)
		}
	})
}

// TestACutThatCanNeverBeMadeIsRefusedNotFatal: a cut whose residual is
// byte-equal to its primary (the rest of the range would never be read),
// whose residual spec is over the store's value cap, or whose progress
// record with the cut is over it, is refused: Retryable matching
// coordination.ErrCutRefused, a reason naming the split, the sizes and the
// cap, nothing written, nothing latched; the tenancy's next plain commit
// lands (docs/protocol.md, "Runtime split", "Refused cuts").
func TestACutThatCanNeverBeMadeIsRefusedNotFatal(t *testing.T) {
	big := func(c byte, n int) string { return strings.Repeat(string(c), n) }
	for _, tc := range []struct {
		name              string
		primary, residual string
		want              []string
	}{
		{"residual equals primary", "same", "same", []string{"split a", "byte-equal to its primary (4 bytes)"}},
		{"residual spec over the cap", "p", big('r', 1000), []string{"split a", "spec record would be", "residual descriptor 1000 bytes", "value cap of 600 bytes"}},
		{"progress record over the cap", big('p', 250), big('r', 250), []string{"split a", "progress record with the cut would be", "primary descriptor 250 bytes, residual descriptor 250 bytes, state 0 bytes", "value cap of 600 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newCutRig(t)
				r.v.ValueCap = 600
				before := r.progress(t)
				res := r.cut(10, tc.primary, tc.residual, 4)
				if !errors.Is(res.Err, coordination.ErrCutRefused) || coordination.KindOf(res.Err) != coordination.Retryable || res.Landed || res.Residual != "" {
					t.Fatalf("cut: landed %v %q, %v; want a Retryable refusal matching ErrCutRefused", res.Landed, res.Residual, res.Err)
				}
				for _, w := range tc.want {
					if !strings.Contains(res.Err.Error(), w) {
						t.Errorf("refusal %q does not say %q", res.Err, w)
					}
				}
				if f := r.v.Failure(); f != nil {
					t.Fatalf("a refused cut latched %v", f)
				}
				if rec := r.progress(t); rec.Cut != nil || rec.Descriptor != nil || rec.Watermark != before.Watermark {
					t.Fatalf("progress %+v after a refused cut, want it untouched", rec)
				}
				if r.exists(t, protocol.SpecKey("_a_2_1")) || r.exists(t, protocol.SplitKey("_a_2_1")) {
					t.Fatal("a refused cut created a residual record")
				}
				if res := r.commit(coordination.SplitProgress{Watermark: 10}); !res.Landed || res.Err != nil {
					t.Fatalf("the commit after the refusal: landed %v, %v", res.Landed, res.Err)
				}
				if rec := r.progress(t); rec.Cut != nil || *rec.Watermark != 10 {
					t.Fatalf("progress %+v, want watermark 10 without a cut", rec)
				}
			})
		})
	}
}
