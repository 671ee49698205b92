package protocol

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestClaimWatchTable(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const bound = 3 * time.Second
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type step struct {
		at      time.Duration
		claim   bool // a claim; otherwise an observation
		waiting bool
	}
	tests := []struct {
		name    string
		bound   time.Duration
		steps   []step
		want    ClaimWatch
		lanes   int  // with budget 8, held 2
		penalty bool // a penalty began on the way
	}{
		{name: "nothing observed is good standing", bound: bound, want: ClaimWatch{}, lanes: 8},
		{name: "a wait begins at its first observation", bound: bound,
			steps: []step{{at: 0}, {at: time.Second, waiting: true}}, want: ClaimWatch{Waiting: at(time.Second)}, lanes: 8},
		{name: "a wait shorter than the bound is no penalty", bound: bound,
			steps: []step{{at: 0, waiting: true}, {at: bound - time.Nanosecond, waiting: true}}, want: ClaimWatch{Waiting: t0}, lanes: 8},
		{name: "a wait of the bound is penalised: no free lane", bound: bound,
			steps: []step{{at: 0, waiting: true}, {at: bound, waiting: true}},
			want:  ClaimWatch{Strikes: 1, Penalised: true, Until: at(2 * bound)}, lanes: 2, penalty: true},
		{name: "a claim restarts the wait", bound: bound,
			steps: []step{{at: 0, waiting: true}, {at: 2 * time.Second, claim: true}, {at: bound, waiting: true}},
			want:  ClaimWatch{Waiting: at(2 * time.Second)}, lanes: 8},
		{name: "a full lane (not waiting) restarts the wait", bound: bound,
			steps: []step{{at: 0, waiting: true}, {at: time.Second}, {at: 2 * time.Second, waiting: true}, {at: bound, waiting: true}},
			want:  ClaimWatch{Waiting: at(2 * time.Second)}, lanes: 8},
		{name: "the penalty lasts its bound, then probation: one free lane", bound: bound,
			steps: []step{{at: 0, waiting: true}, {at: bound, waiting: true}, {at: 2*bound - time.Nanosecond}, {at: 2 * bound}},
			want:  ClaimWatch{Strikes: 1, Until: at(2 * bound)}, lanes: 3, penalty: true},
		{name: "a wait on probation is penalised for twice as long", bound: bound,
			steps: []step{{at: 0, waiting: true}, {at: bound, waiting: true}, {at: 2 * bound, waiting: true}, {at: 3 * bound, waiting: true}},
			want:  ClaimWatch{Strikes: 2, Penalised: true, Until: at(5 * bound)}, lanes: 2, penalty: true},
		{name: "waiting while penalised counts nothing", bound: bound,
			steps: []step{{at: 0, waiting: true}, {at: bound, waiting: true}, {at: bound + time.Second, waiting: true}},
			want:  ClaimWatch{Strikes: 1, Penalised: true, Until: at(2 * bound)}, lanes: 2, penalty: true},
		{name: "a claim while penalised is good standing", bound: bound,
			steps: []step{{at: 0, waiting: true}, {at: bound, waiting: true}, {at: bound + time.Second, claim: true}},
			want:  ClaimWatch{}, lanes: 8, penalty: true},
		{name: "a zero bound is off", bound: 0,
			steps: []step{{at: 0, waiting: true}, {at: time.Hour, waiting: true}}, want: ClaimWatch{}, lanes: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w ClaimWatch
			penalty := false
			for _, s := range tt.steps {
				if s.claim {
					w = w.Claim(at(s.at))
					continue
				}
				before := w.Strikes
				w = w.Observe(at(s.at), s.waiting, tt.bound)
				penalty = penalty || w.Strikes > before
			}
			if w != tt.want {
				t.Fatalf("watch %+v, want %+v", w, tt.want)
			}
			if got := w.Lanes(8, 2); got != tt.lanes {
				t.Fatalf("Lanes(8, 2) = %d, want %d", got, tt.lanes)
			}
			if penalty != tt.penalty {
				t.Fatalf("penalised %v, want %v", penalty, tt.penalty)
			}
		})
	}
}

// The rule against a reference: a member is penalised exactly when it was
// observed waiting without a break (a claim, an observation not waiting, a
// penalty) for the bound; a penalty lasts bound × 2^(strikes−1), at most
// four bounds; a claim is good standing at once; Lanes never exceeds the
// member's budget, is all of it in good standing and leaves no free lane
// while penalised.
func TestClaimWatchProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bound := time.Duration(rapid.IntRange(1, 10).Draw(t, "bound")) * time.Second
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var w ClaimWatch
		var start time.Time // the reference's wait start; zero when not waiting
		var until time.Time // the reference's penalty end; zero when none
		strikes := 0
		for i := range rapid.IntRange(0, 60).Draw(t, "steps") {
			now = now.Add(time.Duration(rapid.Int64Range(0, int64(2*bound)).Draw(t, "delta")))
			budget, held := rapid.IntRange(1, 8).Draw(t, "budget"), rapid.IntRange(0, 8).Draw(t, "held")
			if rapid.IntRange(0, 4).Draw(t, "claim") == 0 {
				w = w.Claim(now)
				if w.Strikes != 0 || w.Penalised || w.Lanes(budget, held) != budget {
					t.Fatalf("step %d: after a claim %+v, lanes %d of %d", i, w, w.Lanes(budget, held), budget)
				}
				strikes, until = 0, time.Time{}
				if !start.IsZero() {
					start = now
				}
				continue
			}
			waiting := rapid.Bool().Draw(t, "waiting")
			w = w.Observe(now, waiting, bound)
			penalised := !until.IsZero() && now.Before(until)
			switch {
			case penalised:
				start = time.Time{}
			case !waiting:
				start, until = time.Time{}, time.Time{}
			case start.IsZero():
				start, until = now, time.Time{}
			case now.Sub(start) >= bound:
				strikes++
				until, start = now.Add(bound*time.Duration(1<<min(strikes-1, 2))), time.Time{}
				penalised = true
			}
			if w.Strikes != strikes || w.Penalised != penalised || w.Waiting != start {
				t.Fatalf("step %d at %v (waiting %v): watch %+v, want strikes %d, penalised %v, waiting since %v", i, now, waiting, w, strikes, penalised, start)
			}
			if w.Penalised && w.Until.Sub(now) > 4*bound {
				t.Fatalf("step %d: a penalty of %v, over four bounds", i, w.Until.Sub(now))
			}
			lanes := w.Lanes(budget, held)
			switch {
			case lanes > budget:
				t.Fatalf("step %d: %d lanes over the budget %d", i, lanes, budget)
			case w.Strikes == 0 && lanes != budget:
				t.Fatalf("step %d: good standing counts %d lanes of %d", i, lanes, budget)
			case w.Penalised && lanes > held:
				t.Fatalf("step %d: penalised with %d lanes for %d held", i, lanes, held)
			case w.Strikes > 0 && !w.Penalised && lanes > held+1:
				t.Fatalf("step %d: probation with %d lanes for %d held", i, lanes, held)
			}
		}
	})
}
