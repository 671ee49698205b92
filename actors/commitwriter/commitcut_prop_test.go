package commitwriter

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// TestCutCommitsUnderFaultsProperty drives one tenancy's commit-writer
// shard with a drawn sequence of commits, cut commits (a driver that keeps
// retrying an unanswered cut with the same descriptors, as the Cutter
// contract asks, also after a success whose answer it missed; now and then
// it breaks the contract and makes a new cut instead), completions
// (retried until they land) and injected faults (a lost CAS reply, a
// failed read-back, a failed create), and checks after every step the
// runtime split's invariants on the store (docs/protocol.md, "Runtime
// split", "Invariants"): the residuals are exactly those of the cuts the
// progress record made, numbered 1..K without a gap, one per cut (no two
// with one descriptor); a residual's records exist only for a durable cut;
// an id CommitCut returned has both records; a completed record has every
// residual confirmed.
func TestCutCommitsUnderFaultsProperty(t *testing.T) {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var msgs []any
	rec := e.Spawn(func() actor.Receiver { return workertest.Recorder{Mu: &mu, Msgs: &msgs} }, "rec")
	t.Cleanup(func() { <-e.Poison(rec).Done() })
	rapid.Check(t, func(rt *rapid.T) {
		fs := &workertest.FaultyStore{Store: memstore.New(30 * time.Second)}
		v := workertest.NewEnv(t, fs)
		v.Engine = e
		v.Ctx, v.Cancel = context.WithCancel(context.Background())
		defer v.Cancel()
		v.PIDs = worker.PIDs{Root: rec, Revoke: rec, SplitWriter: rec}
		ws := New(v)
		v.Commits = ws
		fence := protocol.FreshProgress("a", fpJob, "me", 2, 0)
		rev := workertest.Put(t, fs, protocol.ProgressKey("a"), protocol.EncodeProgress(fence), 0)
		w := ws.of("a")
		w.receive(worker.CellChanged{Split: "a", Epoch: 2, FP: workertest.FP, Prog: fence, Rev: rev, Generation: 5})
		ask := func(p coordination.SplitProgress, cut *coordination.Cut) CommitResult {
			return w.ask(CommitRequest{Ctx: context.Background(), Split: "a", Epoch: 2, Progress: p, Cut: cut})
		}

		var (
			wm       int64
			inFlight *coordination.Cut // the driver's unanswered cut
			made     int               // cuts the driver made in memory
			returned []coordination.SplitID
			maxK     uint64 // the highest cut counter the durable record ever carried
			done     bool
			ending   bool // a completion is unanswered: the driver only retries it
		)
		steps := rapid.IntRange(1, 30).Draw(rt, "steps")
		for step := 0; step < steps && !done; step++ {
			cur := readProg(rt, fs)
			nextID := protocol.ResidualID("a", 2, 1)
			if cur.Cut != nil {
				nextID = protocol.ResidualID("a", 2, cur.Cut.Counter) // the pending one's, if any
			}
			switch rapid.IntRange(0, 5).Draw(rt, "fault") {
			case 1:
				fs.LandThenErr = protocol.ProgressKey("a")
			case 2:
				fs.FailGet = protocol.ProgressKey("a")
			case 3:
				fs.FailCreate = protocol.SpecKey(nextID)
			case 4:
				fs.FailCreate = protocol.SplitKey(nextID)
			}
			wm += int64(rapid.IntRange(0, 3).Draw(rt, "advance"))
			op := rapid.IntRange(0, 3).Draw(rt, "op")
			if ending {
				op = 3
			}
			switch {
			case op <= 1: // cut (or retry the unanswered one)
				if inFlight == nil || rapid.IntRange(0, 9).Draw(rt, "abandon") == 0 {
					// A new cut; abandoning an unanswered one breaks the Cutter
					// contract, which the shard must refuse while that cut may
					// be durable and unconfirmed.
					made++
					inFlight = &coordination.Cut{Primary: fmt.Appendf(nil, "p%d", made), Residual: fmt.Appendf(nil, "r%d", made), ResidualWeight: uint64(made)}
				}
				res := ask(coordination.SplitProgress{Watermark: wm}, inFlight)
				switch {
				case res.Err == nil:
					returned = append(returned, res.Residual)
					if !rapid.Bool().Draw(rt, "answer lost") { // else the caller's deadline ended first: it retries
						inFlight = nil
					}
				case coordination.KindOf(res.Err) != coordination.Retryable:
					rt.Fatalf("step %d: CommitCut: %v", step, res.Err)
				}
			case op == 2:
				if res := ask(coordination.SplitProgress{Watermark: wm}, nil); res.Err != nil && coordination.KindOf(res.Err) != coordination.Retryable {
					rt.Fatalf("step %d: Commit: %v", step, res.Err)
				}
			default:
				res := ask(coordination.SplitProgress{Watermark: wm, Completed: true}, nil)
				switch {
				case res.Err == nil:
					done = true
				case coordination.KindOf(res.Err) != coordination.Retryable:
					rt.Fatalf("step %d: completing Commit: %v", step, res.Err)
				}
				ending = !done
			}
			fs.Mu.Lock()
			fs.LandThenErr, fs.FailGet, fs.FailCreate = "", "", "" // a fault the step did not meet
			fs.Mu.Unlock()
			after := readProg(rt, fs)
			if after.Cut != nil {
				maxK = max(maxK, after.Cut.Counter)
			}
			checkResiduals(rt, fs, after, maxK, returned)
		}
	})
}

func readProg(rt *rapid.T, st store.Store) protocol.ProgressRecord {
	e, _, err := st.Get(context.Background(), store.Durable, protocol.ProgressKey("a"))
	if err != nil {
		rt.Fatal(err)
	}
	r, err := protocol.DecodeProgress(e.Key, e.Value, fpJob)
	if err != nil {
		rt.Fatal(err)
	}
	return r
}

// checkResiduals checks the store's residual records against the progress
// record rec and the highest cut counter maxK it ever carried.
func checkResiduals(rt *rapid.T, st store.Store, rec protocol.ProgressRecord, maxK uint64, returned []coordination.SplitID) {
	ctx := context.Background()
	specs, err := st.List(ctx, store.Durable, "spec.")
	if err != nil {
		rt.Fatal(err)
	}
	splits, err := st.List(ctx, store.Durable, protocol.PrefixSplit)
	if err != nil {
		rt.Fatal(err)
	}
	hasSplit := map[coordination.SplitID]bool{}
	for _, e := range splits {
		r, err := protocol.DecodeSplit(e.Key, e.Value, fpJob)
		if err != nil {
			rt.Fatal(err)
		}
		if r.Parent != "a" {
			rt.Fatalf("split record %+v is not a residual of a", r)
		}
		hasSplit[r.ID] = true
	}
	descs := map[string]coordination.SplitID{}
	hasSpec := map[coordination.SplitID]bool{}
	for _, e := range specs {
		s, err := protocol.DecodeSpec(e.Key, e.Value, fpJob)
		if err != nil {
			rt.Fatal(err)
		}
		n, ok := protocol.ParseResidualID(s.ID)
		if !ok || n.Parent != "a" || n.Epoch != 2 || n.Counter > maxK {
			rt.Fatalf("residual spec %s: not a cut the progress record carried (highest counter %d)", s.ID, maxK)
		}
		if prev, dup := descs[string(s.Descriptor)]; dup {
			rt.Fatalf("residuals %s and %s have one descriptor %q: two residuals of one cut", prev, s.ID, s.Descriptor)
		}
		descs[string(s.Descriptor)] = s.ID
		hasSpec[s.ID] = true
	}
	for id := range hasSplit {
		if !hasSpec[id] {
			rt.Fatalf("residual %s has a split record without its spec", id)
		}
	}
	for k := uint64(1); k < maxK; k++ {
		if id := protocol.ResidualID("a", 2, k); !hasSpec[id] || !hasSplit[id] {
			rt.Fatalf("cut %d was replaced by cut %d before its residual %s was confirmed", k, maxK, id)
		}
	}
	for _, id := range returned {
		if !hasSpec[id] || !hasSplit[id] {
			rt.Fatalf("CommitCut returned %s, whose records do not both exist", id)
		}
	}
	if rec.Completed && maxK > 0 {
		if id := protocol.ResidualID("a", 2, maxK); !hasSpec[id] || !hasSplit[id] {
			rt.Fatalf("the split completed before its residual %s was confirmed", id)
		}
	}
}
