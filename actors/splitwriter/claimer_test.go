package splitwriter

import (
	"slices"
	"testing"

	"github.com/anthdm/hollywood/actor"
	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store/memstore"
)

// claimerRig is a split-writer actor's state, not running, whose claimer
// records the writes it asks for instead of starting them.
type claimerRig struct {
	sw    *splitWriterActor
	asked []splitOp
}

func newClaimerRig(t *testing.T, maxInFlight int) *claimerRig {
	v := workertest.NewEnv(t, memstore.New(0))
	v.Config.MaxInFlight = maxInFlight
	r := &claimerRig{sw: New(v)().(*splitWriterActor)}
	r.sw.claims.enqueue = func(_ *actor.Context, op splitOp) { r.asked = append(r.asked, op) }
	r.sw.claims.live = true
	return r
}

// record folds split id's record into the view at rev: fresh, or naming
// owner's session nonce.
func (r *claimerRig) record(id coordination.SplitID, rev uint64, owner, nonce string) {
	rec := protocol.SplitRecord{ID: id, Weight: 1, Status: protocol.StatusRunnable, Owner: owner, Nonce: nonce}
	if owner != "" {
		rec.Epoch = 1
	}
	r.sw.fold(id, &rec, rev)
}

// presence plays the watch telling of member inst's presence: nonce "" when
// its key is gone.
func (r *claimerRig) presence(inst, nonce string) {
	live := workertest.Presence(r.sw.claims.members, inst, wire.Member{Nonce: nonce}, nonce != "")
	r.sw.claims.presence(wire.PresenceChanged{Instance: inst, Nonce: nonce, Deleted: nonce == "", Live: live})
}

func (r *claimerRig) assign(ids ...coordination.SplitID) {
	r.sw.claims.assignment(ids)
}

// step runs the claimer and returns what it asked for since the last step:
// "claim <id>", "complete <id>" (a claim's completion retried alone) or
// "return <id>".
func (r *claimerRig) step() []string {
	r.sw.claims.step(nil)
	var got []string
	for _, op := range r.asked {
		switch op := op.(type) {
		case claimOp:
			if op.claim.Complete {
				got = append(got, "complete "+string(op.claim.Candidate.ID))
			} else {
				got = append(got, "claim "+string(op.claim.Candidate.ID))
			}
		case leftoverOp:
			got = append(got, "return "+string(op.leftover.Split))
		}
	}
	r.asked = nil
	return got
}

// The claimer decides on the actor's one view of the split records: it
// claims assigned fresh splits in claim order up to the lane budget, claims
// nothing while the watches are not live, after the verdict or once Depart
// began, returns a leftover of its own session that is not assigned, and
// asks for a split again only once its claim was abandoned at an older
// revision than the view's.
func TestTheClaimerClaimsFromTheSplitWritersView(t *testing.T) {
	t.Run("assigned fresh splits up to the lane budget, in claim order", func(t *testing.T) {
		r := newClaimerRig(t, 2)
		for i, id := range []coordination.SplitID{"c", "a", "b"} {
			r.record(id, uint64(i+1), "", "")
		}
		r.assign("a", "b", "c")
		if got := r.step(); !slices.Equal(got, []string{"claim a", "claim b"}) {
			t.Fatalf("asked %v, want claims of a and b (2 lanes)", got)
		}
		if got := r.step(); len(got) != 0 {
			t.Fatalf("asked %v again while both claims are in flight", got)
		}
		r.sw.claims.tenancyStarted("a")
		r.sw.reg.start("a", worker.Tenancy{Epoch: 1, Nonce: "n"})
		if got := r.step(); len(got) != 0 {
			t.Fatalf("asked %v with both lanes taken (a held, b claiming)", got)
		}
		r.sw.claims.abandoned("b", 3, false) // lost at the view's revision of b
		if got := r.step(); !slices.Equal(got, []string{"claim c"}) {
			t.Fatalf("asked %v after b's claim was lost, want c (b waits for a newer record)", got)
		}
	})
	for _, tt := range []struct {
		name string
		stop func(r *claimerRig)
	}{
		{"watches not live", func(r *claimerRig) { r.sw.claims.live = false }},
		{"verdict taken", func(r *claimerRig) { r.sw.verdict = true }},
		{"Depart began", func(r *claimerRig) { r.sw.departing = true }},
		{"session ended", func(r *claimerRig) { r.sw.claims.session = false }},
	} {
		t.Run("nothing while "+tt.name, func(t *testing.T) {
			r := newClaimerRig(t, 4)
			r.record("a", 1, "", "")
			r.assign("a")
			tt.stop(r)
			if got := r.step(); len(got) != 0 {
				t.Fatalf("asked %v", got)
			}
		})
	}
	t.Run("a leftover of this session not assigned is returned", func(t *testing.T) {
		r := newClaimerRig(t, 4)
		r.assign("b")
		r.record("a", 1, "me", "n") // names this session, not held
		if got := r.step(); !slices.Equal(got, []string{"return a"}) {
			t.Fatalf("asked %v, want the return of a", got)
		}
	})
	t.Run("a claim the store failed waits for the next heartbeat", func(t *testing.T) {
		r := newClaimerRig(t, 4)
		r.record("a", 1, "", "")
		r.assign("a")
		if got := r.step(); !slices.Equal(got, []string{"claim a"}) {
			t.Fatalf("asked %v, want the claim of a", got)
		}
		r.sw.claims.abandoned("a", 1, true)
		if got := r.step(); len(got) != 0 {
			t.Fatalf("asked %v before the heartbeat", got)
		}
		r.sw.claims.heartbeat()
		if got := r.step(); !slices.Equal(got, []string{"claim a"}) {
			t.Fatalf("asked %v after the heartbeat, want the claim of a again", got)
		}
	})
	t.Run("a claim's erred completion is retried alone at each heartbeat, assigned or not, until the record moves", func(t *testing.T) {
		r := newClaimerRig(t, 4)
		r.record("a", 1, "", "")
		r.assign("a")
		if got := r.step(); !slices.Equal(got, []string{"claim a"}) {
			t.Fatalf("asked %v, want the claim of a", got)
		}
		r.record("a", 2, "me", "n") // the claim's write, learnt from its result
		r.sw.claims.completionErred("a", 2)
		r.sw.claims.abandoned("a", 2, true)
		if got := r.step(); len(got) != 0 {
			t.Fatalf("asked %v before the heartbeat", got)
		}
		r.sw.claims.assignment([]coordination.SplitID{"b"})
		for range 2 { // the retry errs too: retried again
			r.sw.claims.heartbeat()
			if got := r.step(); !slices.Equal(got, []string{"complete a"}) {
				t.Fatalf("asked %v after the heartbeat, want the completion of a alone", got)
			}
			r.sw.claims.abandoned("a", 2, true)
		}
		r.presence("w2", "s2")
		r.record("a", 3, "w2", "s2") // a peer's live session took it
		r.sw.claims.heartbeat()
		if got := r.step(); len(got) != 0 {
			t.Fatalf("asked %v for a record a live peer holds", got)
		}
	})
	t.Run("an owner's session ending makes its split a takeover", func(t *testing.T) {
		r := newClaimerRig(t, 4)
		r.presence("w2", "s2")
		r.record("a", 1, "w2", "s2")
		r.assign("a")
		if got := r.step(); len(got) != 0 {
			t.Fatalf("asked %v while w2's session is live", got)
		}
		r.presence("w2", "")
		if got := r.step(); !slices.Equal(got, []string{"claim a"}) {
			t.Fatalf("asked %v after w2's presence went, want the takeover of a", got)
		}
	})
}

// TestDiffAssigned checks the assignment's diff against set arithmetic:
// added is next minus old, removed is old minus next, and together with
// what both name they account for every split of either, each once.
func TestDiffAssigned(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.SampledFrom([]coordination.SplitID{"a", "b", "c", "d", "e", "f"})
		old := map[coordination.SplitID]bool{}
		for _, s := range rapid.SliceOfDistinct(id, func(s coordination.SplitID) coordination.SplitID { return s }).Draw(t, "old") {
			old[s] = true
		}
		next := rapid.SliceOfDistinct(id, func(s coordination.SplitID) coordination.SplitID { return s }).Draw(t, "next")
		set, added, removed := diffAssigned(old, next)
		if len(set) != len(next) {
			t.Fatalf("set %v, want the %d splits of %v", set, len(next), next)
		}
		for _, s := range next {
			if !set[s] {
				t.Fatalf("set %v lacks %s", set, s)
			}
			if slices.Contains(added, s) == old[s] {
				t.Fatalf("%s: in added %v, in old %v", s, added, old[s])
			}
		}
		for s := range old {
			if slices.Contains(removed, s) == set[s] {
				t.Fatalf("%s: in removed %v, in next %v", s, removed, set[s])
			}
		}
		for _, s := range removed {
			if !old[s] {
				t.Fatalf("removed %v names %s, which old did not", removed, s)
			}
		}
		if !slices.IsSorted(removed) {
			t.Fatalf("removed %v is not sorted", removed)
		}
	})
}
