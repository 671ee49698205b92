package splitwriter

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// listFailingStore fails every List with err.
type listFailingStore struct {
	*memstore.Store
	err error
}

func (s listFailingStore) List(context.Context, store.Keyspace, string) ([]store.Entry, error) {
	return nil, s.err
}

// verdictRig is a lone split-writer actor's state whose root and own inbox are
// recorders, so the verdict's listing and judgment are seen as messages.
type verdictRig struct {
	sw   *splitWriterActor
	v    *worker.Env
	mu   sync.Mutex
	msgs []any
}

func newVerdictRig(t *testing.T, st store.Store) *verdictRig {
	e, _ := workertest.NewEngine(t)
	vr := &verdictRig{}
	v := workertest.NewEnv(t, st)
	v.Engine = e
	v.Ctx, v.Cancel = context.WithCancel(context.Background())
	rec := e.Spawn(func() actor.Receiver { return workertest.Recorder{Mu: &vr.mu, Msgs: &vr.msgs} }, "rec")
	v.PIDs.Root, v.PIDs.SplitWriter = rec, rec
	t.Cleanup(func() {
		v.Cancel()
		v.WG.Wait()
		<-e.Poison(rec).Done()
	})
	vr.v, vr.sw = v, New(v)().(*splitWriterActor)
	vr.sw.fp = workertest.FP // as a live SessionChanged sets it
	// A final plan of one split, completed in the view: the gate passes.
	vr.sw.plan, vr.sw.hasPlan = protocol.PlanRecord{Finality: coordination.PlanFinal, Planned: 1}, true
	return vr
}

func (vr *verdictRig) take() []any {
	synctest.Wait()
	vr.mu.Lock()
	defer vr.mu.Unlock()
	m := vr.msgs
	vr.msgs = nil
	return m
}

func TestVerdictListing(t *testing.T) {
	fp := protocol.Fingerprint("job:v1")
	done := protocol.SplitRecord{ID: "a", FP: fp, Weight: 1, Epoch: 1, Status: protocol.StatusCompleted}
	tests := []struct {
		name    string
		listErr error
		stored  []byte // the listed split record's value
		verdict bool   // the verdict is raised to the root
		fatal   bool
	}{
		{name: "a completed listing is AllComplete", stored: protocol.EncodeSplit(done), verdict: true},
		{name: "a failed listing retries later", listErr: coordination.Errorf(coordination.Retryable, "down")},
		{name: "a Fatal listing error latches", listErr: coordination.Errorf(coordination.Fatal, "broken"), fatal: true},
		{name: "a corrupt record latches Fatal", stored: []byte(`{"x":1}`), fatal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ms := memstore.New(30 * time.Second)
				var st store.Store = ms
				if tt.listErr != nil {
					st = listFailingStore{Store: ms, err: tt.listErr}
				}
				if tt.stored != nil {
					workertest.Put(t, ms, protocol.SplitKey("a"), tt.stored, 0)
				}
				vr := newVerdictRig(t, st)
				vr.sw.fold("a", &done, 1)
				got := vr.take()
				if len(got) != 1 {
					t.Fatalf("the gate passed but no listing came back: %v", got)
				}
				m, ok := got[0].(verdictListed)
				if !ok {
					t.Fatalf("got %T, want verdictListed", got[0])
				}
				vr.sw.listed(m)
				if vr.sw.judging {
					t.Fatal("still judging after the listing")
				}
				var reached bool
				for _, msg := range vr.take() {
					if r, ok := msg.(wire.EventsRaised); ok && len(r.Events) == 1 {
						switch r.Events[0].(type) {
						case coordination.AllComplete, coordination.Stalled:
							reached = true
						}
					}
				}
				if reached != tt.verdict || vr.sw.verdict != tt.verdict {
					t.Fatalf("verdict sent %v, taken %v, want %v", reached, vr.sw.verdict, tt.verdict)
				}
				if f := vr.v.Failure(); (f != nil) != tt.fatal {
					t.Fatalf("failure %v, want fatal %v", f, tt.fatal)
				}
			})
		})
	}
}

// TestVerdictJudgesAgainAfterARecordTheViewLacked: a listing that shows a
// split record the view did not hold when it began (a residual created
// during the listing, here already completed, or still runnable) does not
// decide (docs/protocol.md, "Runtime split", "Completion"): it is applied
// to the view, which is judged again; only a listing of records all in the
// view before it began gives AllComplete.
func TestVerdictJudgesAgainAfterARecordTheViewLacked(t *testing.T) {
	fp := protocol.Fingerprint("job:v1")
	parent := protocol.SplitRecord{ID: "a", FP: fp, Weight: 1, Epoch: 1, Status: protocol.StatusCompleted}
	rid := protocol.ResidualID("a", 1, 1)
	for _, tt := range []struct {
		name    string
		status  protocol.Status
		relists bool // the view passes the gate again: a second listing
	}{
		{"a completed residual: listed again, then AllComplete", protocol.StatusCompleted, true},
		{"a runnable residual: no verdict, no listing", protocol.StatusRunnable, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ms := memstore.New(30 * time.Second)
				workertest.Put(t, ms, protocol.SplitKey("a"), protocol.EncodeSplit(parent), 0)
				vr := newVerdictRig(t, ms)
				vr.sw.fold("a", &parent, 1)
				first := onlyListing(t, vr.take())
				// The residual is created between the gate and the listing.
				res := protocol.Cut{ID: rid, Epoch: 1, Counter: 1, Weight: 1}.ResidualSplit("a", fp, 0)
				res.Status = tt.status
				first.recs = append(first.recs, res)
				first.revs = append(first.revs, 2)
				workertest.Put(t, ms, protocol.SplitKey(rid), protocol.EncodeSplit(res), 0)
				vr.sw.listed(first)
				if vr.sw.verdict {
					t.Fatal("a listing showing a record the view lacked decided the verdict")
				}
				if _, ok := vr.sw.records[rid]; !ok {
					t.Fatal("the listing was not applied to the view")
				}
				got := vr.take()
				if !tt.relists {
					if len(got) != 0 {
						t.Fatalf("got %v, want nothing (the view does not pass the gate)", got)
					}
					return
				}
				second := onlyListing(t, got)
				if len(second.recs) != 2 {
					t.Fatalf("the second listing shows %d records, want the parent and the residual", len(second.recs))
				}
				vr.sw.listed(second)
				if !vr.sw.verdict {
					t.Fatal("a listing of records all in the view before it began gave no verdict")
				}
			})
		})
	}
}

// onlyListing returns the one verdictListed of msgs.
func onlyListing(t *testing.T, msgs []any) verdictListed {
	t.Helper()
	if len(msgs) != 1 {
		t.Fatalf("got %v, want one listing", msgs)
	}
	m, ok := msgs[0].(verdictListed)
	if !ok {
		t.Fatalf("got %T, want verdictListed", msgs[0])
	}
	return m
}
