package leader

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
)

// Issue #37: a presence that never claims ("rogue", advertising 4096
// lanes) was placed splits that waited as long as it lived. Now a member
// that leaves a published split unclaimed for LeaseDuration while it has a
// free lane loses its free lanes (docs/protocol.md, "Members that do not
// claim"): its record is emptied, the split goes to w1 once w1 has a lane,
// and w1, which claims, keeps everything it holds.
func TestSplitsLeftUnclaimedMoveOffTheirMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := newLeaderRig(t, workertest.FinalPlan("a", "b", "c"), func(c *coordination.Config) { c.MaxInFlight = 2 })
		lr.goLive()
		lr.mustLead(1)
		lr.observeSplits()
		lr.revs++
		lr.send(wire.PresenceChanged{Instance: "rogue", Nonce: "nonce-rogue", MaxInFlight: 4096, Rev: 100 + lr.revs})
		lr.held("w1", "nonce-w1", 1, 1, "", "a", "b") // w1's two lanes are full
		names := func(w string) []coordination.SplitID {
			a, _, _ := lr.assignment(w)
			return a.Splits
		}
		if got := names("rogue"); !slices.Equal(got, []coordination.SplitID{"c"}) {
			t.Fatalf("rogue's assignment %v, want [c]: the only member with a free lane", got)
		}
		lr.beat()
		lr.beat() // two thirds of a lease: within the bound
		if got := names("rogue"); !slices.Equal(got, []coordination.SplitID{"c"}) {
			t.Fatalf("rogue's assignment %v within LeaseDuration, want [c]", got)
		}
		lr.beat() // a lease since c was published: the rogue loses its free lanes
		if got := names("rogue"); len(got) != 0 {
			t.Fatalf("rogue's assignment %v after a lease unclaimed, want none", got)
		}
		if got := names("w1"); !slices.Equal(got, []coordination.SplitID{"a", "b"}) {
			t.Fatalf("w1's assignment %v, want [a b]: a member that claims loses nothing to the rule", got)
		}
		lr.revs++ // w1 completes a: its lane takes c
		lr.send(recordmsg.RecordsChanged{Records: []recordmsg.RecordChanged{{Split: "a", Rev: 100 + lr.revs, Record: protocol.SplitRecord{ID: "a",
			FP: protocol.Fingerprint("job:v1"), Weight: 1, Epoch: 1, Status: protocol.StatusCompleted, Owner: "w1", Nonce: "nonce-w1"}}}})
		if got := names("w1"); !slices.Equal(got, []coordination.SplitID{"b", "c"}) {
			t.Fatalf("w1's assignment %v once a completed, want [b c]", got)
		}
	})
}

// The rule's observations in the view: a member whose lanes are full (a
// split it drains besides its assignment), one whose published split is
// still held by another live session (in transit), and one that claims
// within the bound are never penalised; one that leaves a split unclaimed
// for LeaseDuration is, counts no free lane for the cutter, and is in good
// standing again at its next claim.
func TestTheUnclaimedRuleSparesMembersThatCannotClaim(t *testing.T) {
	cfg := coordination.DefaultConfig()
	f := newFleetView(0)
	f.watchClaims()
	f.publishedTo = map[coordination.SplitID]string{}
	run := func(owner, nonce string) splitFacts {
		return splitFacts{owner: owner, nonce: nonce, epoch: 1, weight: 1, seen: true, status: protocol.StatusRunnable}
	}
	for m, b := range map[string]uint32{"full": 2, "transit": 2, "prompt": 2, "rogue": 4096, "other": 2} {
		f.join(m, b, "n-"+m)
	}
	f.records["x"], f.records["y"], f.records["z"] = run("full", "n-full"), run("full", "n-full"), run("", "")
	f.publishedTo["y"], f.publishedTo["z"] = "full", "full" // x is revoked and drains: full holds two
	f.records["t"] = run("other", "n-other")
	f.publishedTo["t"] = "transit"
	f.records["p"] = run("", "")
	f.publishedTo["p"] = "prompt"
	f.records["r"] = run("", "")
	f.publishedTo["r"] = "rogue"

	t0 := time.Unix(1000, 0)
	lease := cfg.LeaseDuration
	for i := range 4 {
		now := t0.Add(time.Duration(i) * lease / 3)
		if i == 2 {
			f.records["p"] = run("prompt", "n-prompt")
			f.claimedAt("prompt", now)
		}
		changed, penalised := f.observeClaims(now, cfg, 0)
		if changed != (i == 3) || changed && !slices.Equal(penalised, []string{"rogue"}) {
			t.Fatalf("observation %d reported a change %v, penalties %v", i, changed, penalised)
		}
	}
	for _, m := range []string{"full", "transit", "prompt", "other"} {
		if w := f.claims[m]; w.Strikes != 0 {
			t.Errorf("%s penalised: %+v", m, w)
		}
	}
	if w := f.claims["rogue"]; !w.Penalised {
		t.Fatalf("rogue not penalised after a lease unclaimed: %+v", w)
	}
	in, laneless := f.assignInput(cfg, "job:v1", 0)
	if !slices.Equal(laneless, []string{"rogue"}) || slices.Contains(in.Members, "rogue") {
		t.Fatalf("laneless %v, members %v; want the rogue laneless and out of the input", laneless, in.Members)
	}
	for _, m := range f.cutInput(cfg, 0, nil, nil).Members {
		if m.Instance == "rogue" && m.Budget != 0 {
			t.Fatalf("the cutter counts %d lanes of the penalised rogue", m.Budget)
		}
	}
	if !f.claimedAt("rogue", t0.Add(2*lease)) {
		t.Fatal("a claim by the penalised rogue did not give its lanes back")
	}
	if w := f.claims["rogue"]; w.Strikes != 0 || w.Penalised {
		t.Fatalf("rogue after its claim: %+v, want good standing", w)
	}
}

// A penalised member that holds splits keeps them: its lanes are what it
// holds, and the split published to it that it left unclaimed no longer
// counts as its own, so the assignment places that one on a member with a
// free lane and moves nothing it holds.
func TestAPenalisedMemberKeepsWhatItHolds(t *testing.T) {
	cfg := coordination.DefaultConfig()
	f := newFleetView(0)
	f.watchClaims()
	f.publishedTo = map[coordination.SplitID]string{"x": "slow", "y": "slow"}
	f.join("w1", 4, "n-w1")
	f.join("slow", 4, "n-slow")
	f.records["x"] = splitFacts{owner: "slow", nonce: "n-slow", epoch: 1, weight: 1, seen: true, status: protocol.StatusRunnable}
	f.records["y"] = splitFacts{epoch: 1, weight: 1, seen: true, status: protocol.StatusRunnable}
	t0 := time.Unix(1000, 0)
	f.observeClaims(t0, cfg, 0)
	if changed, _ := f.observeClaims(t0.Add(cfg.LeaseDuration), cfg, 0); !changed || !f.claims["slow"].Penalised {
		t.Fatalf("slow not penalised after leaving y unclaimed for a lease: %+v", f.claims["slow"])
	}
	in, laneless := f.assignInput(cfg, "job:v1", 0)
	if len(laneless) != 0 || in.Caps["slow"] != 1 {
		t.Fatalf("laneless %v, slow's cap %d; want slow kept with one lane, for x", laneless, in.Caps["slow"])
	}
	for _, s := range in.Splits {
		if s.ID == "y" && s.Owner != "" {
			t.Fatalf("y counts as %s's for the sticky pass; want no owner", s.Owner)
		}
	}
	out := protocol.Assign(in)
	if !slices.Equal(out.Assigned["slow"], []coordination.SplitID{"x"}) || !slices.Equal(out.Assigned["w1"], []coordination.SplitID{"y"}) {
		t.Fatalf("assigned %v, want x kept on slow and y on w1", out.Assigned)
	}
}
