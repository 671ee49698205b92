package splitwriter

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/messages"
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
		verdict bool   // VerdictReached reaches the root
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
				vr.sw.fold("a", done, 1)
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
					_, reached = msg.(messages.VerdictReached)
				}
				if reached != tt.verdict || vr.sw.verdict != tt.verdict {
					t.Fatalf("verdict sent %v, taken %v, want %v", reached, vr.sw.verdict, tt.verdict)
				}
				if f := vr.v.Outbox.Failure(); (f != nil) != tt.fatal {
					t.Fatalf("failure %v, want fatal %v", f, tt.fatal)
				}
			})
		})
	}
}
