package protocol

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
)

// claimFleet models a leader that places splits with Assign under the
// unclaimed rule, and members that claim what is published to them: prompt
// members claim every published split no one holds, up to their budget, at
// the next step; rogues never claim. One step is a heartbeat, a third of
// the bound; a held split completes after its work steps, and a split the
// assignment moves off its owner is handed back at the next step.
type claimFleet struct {
	members []string
	rogue   map[string]bool
	budget  map[string]int
	watch   map[string]ClaimWatch
	owner   map[coordination.SplitID]string // "" when no one holds it
	work    map[coordination.SplitID]int    // steps left; 0 when completed
	pub     map[coordination.SplitID]string // the member the last assignment names
	// onRogue is the rogue each split is published to, unheld, and since
	// when; absent when it is not.
	onRogue map[coordination.SplitID]rogueStretch
}

// rogueStretch is a stretch of a split published to a rogue, unheld.
type rogueStretch struct {
	rogue string
	since time.Time
}

const claimStep = time.Second

// held counts m's splits.
func (f *claimFleet) held(m string) int {
	n := 0
	for _, o := range f.owner {
		if o == m {
			n++
		}
	}
	return n
}

// step runs one heartbeat at now: members act on the last assignment, held
// splits progress, the leader observes and assigns again.
func (f *claimFleet) step(now time.Time, bound time.Duration) {
	for _, id := range slices.Sorted(maps.Keys(f.pub)) {
		m := f.pub[id]
		switch o := f.owner[id]; {
		case o != "" && o != m:
			f.owner[id] = "" // moved: handed back
		case o == "" && f.work[id] > 0 && !f.rogue[m] && f.held(m) < f.budget[m]:
			f.owner[id] = m
			f.watch[m] = f.watch[m].Claim(now)
		}
	}
	for id, o := range f.owner {
		if o != "" && f.pub[id] == o {
			if f.work[id]--; f.work[id] == 0 {
				f.owner[id] = ""
			}
		}
	}
	waiting := map[string]bool{}
	for id, m := range f.pub {
		if f.owner[id] == "" && f.work[id] > 0 {
			waiting[m] = true
		}
	}
	for _, m := range f.members {
		h := f.held(m)
		f.watch[m] = f.watch[m].Observe(now, waiting[m] && h < f.watch[m].Lanes(f.budget[m], h), bound)
	}
	in := AssignInput{DefaultCap: 1, Caps: map[string]int{}, FP: 7}
	for _, m := range f.members {
		if l := f.watch[m].Lanes(f.budget[m], f.held(m)); l > 0 {
			in.Members = append(in.Members, m)
			in.Caps[m] = l
		}
	}
	for id, left := range f.work {
		if left == 0 {
			continue
		}
		owner := f.owner[id]
		if p := f.pub[id]; owner == "" && p != "" && !f.watch[p].Penalised {
			owner = p // the sticky pass counts a published split as its member's
		}
		in.Splits = append(in.Splits, AssignSplit{ID: id, Weight: 1, HasSpec: true, Status: StatusRunnable, Owner: owner})
	}
	f.pub = map[coordination.SplitID]string{}
	for m, ids := range Assign(in).Assigned {
		for _, id := range ids {
			f.pub[id] = m
		}
	}
	for id := range f.work {
		m, ok := f.pub[id]
		switch {
		case ok && f.rogue[m] && f.owner[id] == "" && f.work[id] > 0:
			if was, ok := f.onRogue[id]; !ok || was.rogue != m {
				f.onRogue[id] = rogueStretch{m, now}
			}
		default:
			delete(f.onRogue, id)
		}
	}
}

// A fleet of prompt members and rogues (presences that never claim) under
// the unclaimed rule: a prompt member is never penalised and never loses a
// lane to the rule; no split stays published to a rogue, unheld, for longer
// than the bound and two heartbeats (the wait is seen at the heartbeat after
// the publish and judged at the first heartbeat past the bound); and with
// one prompt member or more every split completes, each held by a member
// that claims it.
func TestUnclaimedRuleModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bound := 3 * claimStep
		f := &claimFleet{rogue: map[string]bool{}, budget: map[string]int{}, watch: map[string]ClaimWatch{},
			owner: map[coordination.SplitID]string{}, work: map[coordination.SplitID]int{}, pub: map[coordination.SplitID]string{},
			onRogue: map[coordination.SplitID]rogueStretch{}}
		prompt := rapid.IntRange(1, 3).Draw(t, "prompt")
		rogues := rapid.IntRange(0, 3).Draw(t, "rogues")
		for i := range prompt + rogues {
			m := fmt.Sprintf("w%d", i)
			f.members = append(f.members, m)
			f.rogue[m] = i >= prompt
			f.budget[m] = rapid.IntRange(1, 4).Draw(t, "budget")
			if f.rogue[m] && rapid.Bool().Draw(t, "huge") {
				f.budget[m] = 4096
			}
		}
		work := 0
		for i := range rapid.IntRange(1, 12).Draw(t, "splits") {
			id := coordination.SplitID(fmt.Sprintf("s%02d", i))
			f.work[id] = rapid.IntRange(1, 4).Draw(t, "work")
			work += f.work[id]
		}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		// Each split is held at most its work steps and waits on a rogue at
		// most a bound and two heartbeats per probation; a rogue's
		// probations come at least a bound apart.
		limit := work + 20*len(f.work)*(rogues+1)
		for i := 0; i < limit; i++ {
			now = now.Add(claimStep)
			f.step(now, bound)
			for _, m := range f.members {
				if w := f.watch[m]; !f.rogue[m] && w.Strikes > 0 {
					t.Fatalf("step %d: prompt member %s penalised: %+v", i, m, w)
				}
			}
			for id, r := range f.onRogue {
				if d := now.Sub(r.since); d > bound+2*claimStep {
					t.Fatalf("step %d: split %s published to rogue %s, unheld, for %v", i, id, r.rogue, d)
				}
			}
			for id, o := range f.owner {
				if o != "" && f.rogue[o] {
					t.Fatalf("step %d: rogue %s holds %s", i, o, id)
				}
			}
			done := true
			for _, left := range f.work {
				done = done && left == 0
			}
			if done {
				return
			}
		}
		t.Fatalf("not complete after %d heartbeats: work left %v, owners %v, published %v, watches %+v", limit, f.work, f.owner, f.pub, f.watch)
	})
}
