package protocol

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
)

var cutT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// genCutInput draws a small fleet: a few members with few lanes, some
// unheld splits, held splits with estimates of a few sizes so that ties and
// near-thresholds are common, and a rate bound that sometimes forbids.
func genCutInput() *rapid.Generator[CutInput] {
	return rapid.Custom(func(t *rapid.T) CutInput {
		in := CutInput{Now: cutT0.Add(time.Duration(rapid.IntRange(0, 20).Draw(t, "now")) * time.Second)}
		for i := range rapid.IntRange(0, 4).Draw(t, "members") {
			in.Members = append(in.Members, CutMember{
				Instance: fmt.Sprintf("w%d", i),
				Budget:   rapid.OneOf(rapid.Uint32Range(0, 6), rapid.SampledFrom([]uint32{100, 4096})).Draw(t, "budget"),
				Held:     rapid.Uint32Range(0, 3).Draw(t, "held"),
			})
		}
		in.Unheld = rapid.SliceOfN(rapid.Uint64Range(1, 100), 0, 3).Draw(t, "unheld")
		in.Pending = rapid.IntRange(0, 4).Draw(t, "pending")
		remaining := rapid.OneOf(rapid.Uint64Range(0, 40), rapid.SampledFrom([]uint64{100, 1000, math.MaxUint64}))
		for i := range rapid.IntRange(0, 8).Draw(t, "held splits") {
			in.Held = append(in.Held, CutHeld{
				Split:       coordination.SplitID(fmt.Sprintf("s%d", i)),
				Owner:       fmt.Sprintf("w%d", rapid.IntRange(0, 3).Draw(t, "owner")),
				Epoch:       rapid.Uint64Range(1, 3).Draw(t, "epoch"),
				Remaining:   remaining.Draw(t, "remaining"),
				Reported:    rapid.Float64Range(0, 1).Draw(t, "reported") < 0.8,
				Outstanding: rapid.Float64Range(0, 1).Draw(t, "outstanding") < 0.2,
				Cuts:        rapid.OneOf(rapid.Uint64Range(0, 3), rapid.Just[uint64](math.MaxUint64)).Draw(t, "cuts"),
			})
		}
		if rapid.Bool().Draw(t, "leading since") {
			in.LeadingSince = cutT0.Add(time.Duration(rapid.IntRange(0, 20).Draw(t, "last")) * time.Second)
		}
		in.Interval = time.Duration(rapid.IntRange(-1, 10).Draw(t, "interval")) * time.Second
		in.MinWeight = rapid.SampledFrom([]uint64{0, 1, 5, 50}).Draw(t, "min")
		return in
	})
}

// checkCuts holds the invariants of docs/protocol.md "Who decides" for any
// input: many answers could be right, so the output is checked against
// rules, not one expected list.
func checkCuts(t interface{ Fatalf(string, ...any) }, in CutInput, asks []CutAsk) {
	rateOK := in.Interval >= 0 && (in.LeadingSince.IsZero() || !in.Now.Before(in.LeadingSince.Add(in.Interval)))
	idle := in.IdleLanes()
	if len(asks) > 0 && !rateOK {
		t.Fatalf("asked %v within the interval (now %v, last %v, interval %v)", asks, in.Now, in.LeadingSince, in.Interval)
	}
	parts := 0
	for _, a := range asks {
		parts += int(a.Parts)
	}
	if parts > idle {
		t.Fatalf("asked %d residuals with %d idle lanes", parts, idle)
	}
	held := map[coordination.SplitID]CutHeld{}
	for _, h := range in.Held {
		held[h.Split] = h
	}
	perLane := in.PerLane()
	asked := map[coordination.SplitID]bool{}
	for i, a := range asks {
		h, ok := held[a.Split]
		switch {
		case !ok:
			t.Fatalf("asked to cut %s, which no live session holds", a.Split)
		case asked[a.Split]:
			t.Fatalf("asked to cut %s twice", a.Split)
		case !h.Reported || h.Outstanding || h.Cuts == math.MaxUint64:
			t.Fatalf("asked to cut %+v: no estimate, a request outstanding or no counter left", h)
		case a.Owner != h.Owner || a.Epoch != h.Epoch || a.Counter != h.Cuts+1 || a.Counter == 0:
			t.Fatalf("asked %+v of the wrong tenancy %+v", a, h)
		case a.Parts == 0 || a.Parts > CutPartsMax:
			t.Fatalf("ask %+v cuts off no residual, or more than %d", a, CutPartsMax)
		case a.Parts == 1 && (a.KeepPPM < KeepPPMHalf || a.KeepPPM > keepPPMMax):
			t.Fatalf("keep %d ppm out of range", a.KeepPPM)
		case a.Parts > 1 && a.KeepPPM != EqualKeepPPM(a.Parts):
			t.Fatalf("ask %+v of several parts does not divide the split equally", a)
		case a.Parts > 1 && (h.Remaining/uint64(a.Parts+1) < max(in.MinWeight, 1) || float64(h.Remaining/uint64(a.Parts+1)) < perLane):
			t.Fatalf("ask %+v cuts pieces below the minimum %d or the per-lane share %v", a, in.MinWeight, perLane)
		case a.Residual < max(in.MinWeight, 1) || a.Residual != residualOf(h.Remaining, a.KeepPPM)/uint64(a.Parts):
			t.Fatalf("residual %d of %+v below the minimum %d or not the cut's", a.Residual, h, in.MinWeight)
		case float64(h.Remaining) <= perLane:
			t.Fatalf("cut %+v whose remaining is not above the per-lane share %v", h, perLane)
		case i > 0 && held[asks[i-1].Split].Remaining < h.Remaining:
			t.Fatalf("asks not in descending remaining work: %v", asks)
		}
		asked[a.Split] = true
	}
	// Largest first: every candidate left out ranks after every one asked,
	// or is not worth a cut; and when lanes idle, rate allows and some
	// candidate is worth a cut, something is asked.
	worth := 0
	for _, h := range in.Held {
		if !h.Reported || h.Outstanding || h.Cuts == math.MaxUint64 {
			continue
		}
		_, _, ok := CutOf(h.Remaining, perLane, in.MinWeight)
		if ok {
			worth++
		}
		if asked[h.Split] || !ok {
			continue
		}
		for _, a := range asks {
			if r := held[a.Split].Remaining; r < h.Remaining || r == h.Remaining && a.Split > h.Split {
				t.Fatalf("left out %+v, larger than asked %+v", h, a)
			}
		}
	}
	if rateOK && idle > 0 && worth > 0 && len(asks) != min(idle, worth) {
		t.Fatalf("asked %d cuts with %d idle lanes and %d splits worth one", len(asks), idle, worth)
	}
	// Spread: lanes left idle only when no ask could take one more part.
	for _, a := range asks {
		if p := equalPiece(held[a.Split].Remaining, a.Parts+1); parts < idle && a.Parts < CutPartsMax && p >= max(in.MinWeight, 1) && float64(p) >= perLane {
			t.Fatalf("%d lanes left idle while %+v could be cut into pieces of %d", idle-parts, a, p)
		}
	}
}

// TestDecideCutsProperties: for any fleet, DecideCuts keeps the rules of
// "Who decides" and ignores the order of its inputs.
func TestDecideCutsProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genCutInput().Draw(t, "input")
		asks := DecideCuts(in)
		checkCuts(t, in, asks)
		shuffled := in
		shuffled.Held = slices.Clone(in.Held)
		shuffled.Unheld = slices.Clone(in.Unheld)
		shuffled.Members = slices.Clone(in.Members)
		slices.Reverse(shuffled.Held)
		slices.Reverse(shuffled.Unheld)
		slices.Reverse(shuffled.Members)
		if again := DecideCuts(shuffled); !reflect.DeepEqual(again, asks) {
			t.Fatalf("order of inputs changed the decision:\n%v\n%v", asks, again)
		}
	})
}

// TestCutOfProperties: the residual is never below the minimum, the
// primary keeps at least half, and a larger split is never less worth a
// cut than a smaller one (so largest-first skips nothing it should ask).
func TestCutOfProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := rapid.OneOf(rapid.Uint64Range(0, 1000), rapid.Uint64()).Draw(t, "r")
		bigger := r + rapid.Uint64Range(0, 1000).Draw(t, "more")
		if bigger < r {
			bigger = math.MaxUint64
		}
		perLane := rapid.Float64Range(0, 2000).Draw(t, "per lane")
		minW := rapid.Uint64Range(0, 600).Draw(t, "min")
		keep, residual, ok := CutOf(r, perLane, minW)
		if ok && (residual < max(minW, 1) || keep < KeepPPMHalf || keep > keepPPMMax || float64(r) <= perLane) {
			t.Fatalf("CutOf(%d, %v, %d) = %d, %d, ok", r, perLane, minW, keep, residual)
		}
		if ok && residual > r/2 {
			t.Fatalf("CutOf(%d, ...) cut off %d, more than half", r, residual)
		}
		if _, res2, ok2 := CutOf(bigger, perLane, minW); ok && (!ok2 || res2 < residual) {
			t.Fatalf("CutOf(%d) ok with residual %d, CutOf(%d) = %d, %v", r, residual, bigger, res2, ok2)
		}
	})
}

func TestDecideCutsTable(t *testing.T) {
	members := func(budget, held []uint32) []CutMember {
		ms := make([]CutMember, len(budget))
		for i := range budget {
			ms[i] = CutMember{Instance: fmt.Sprintf("w%d", i), Budget: budget[i], Held: held[i]}
		}
		return ms
	}
	big := CutHeld{Split: "big", Owner: "w0", Epoch: 2, Remaining: 900, Reported: true}
	mid := CutHeld{Split: "mid", Owner: "w1", Epoch: 1, Remaining: 300, Reported: true}
	small := CutHeld{Split: "small", Owner: "w1", Epoch: 1, Remaining: 10, Reported: true}
	tests := []struct {
		name string
		in   CutInput
		want []CutAsk
	}{
		{"the tail: one straggler, idle lanes", CutInput{Members: members([]uint32{2, 2}, []uint32{1, 0}),
			Held: []CutHeld{big}, Now: cutT0, Interval: time.Second, MinWeight: 10},
			[]CutAsk{{Split: "big", Owner: "w0", Epoch: 2, Counter: 1, KeepPPM: 250_000, Parts: 3, Residual: 225}}},
		{"thousands of idle lanes: at most CutPartsMax parts", CutInput{Members: members([]uint32{1, 4096}, []uint32{1, 0}),
			Held: []CutHeld{{Split: "a", Owner: "w0", Epoch: 1, Remaining: 1_000_000, Reported: true}}, Now: cutT0, Interval: time.Second},
			[]CutAsk{{Split: "a", Owner: "w0", Epoch: 1, Counter: 1, KeepPPM: 15385, Parts: CutPartsMax, Residual: 15384}}},
		{"largest first, one per idle lane", CutInput{Members: members([]uint32{1, 1, 4}, []uint32{1, 1, 3}),
			Held: []CutHeld{small, mid, big}, Now: cutT0, Interval: time.Second},
			[]CutAsk{{Split: "big", Owner: "w0", Epoch: 2, Counter: 1, KeepPPM: KeepPPMHalf, Parts: 1, Residual: 450}}},
		{"two lanes, one straggler: halved", CutInput{Members: members([]uint32{1, 1}, []uint32{1, 0}),
			Held: []CutHeld{{Split: "a", Owner: "w0", Epoch: 1, Remaining: 120, Reported: true}}, Unheld: nil,
			Now: cutT0, Interval: time.Second},
			[]CutAsk{{Split: "a", Owner: "w0", Epoch: 1, Counter: 1, KeepPPM: KeepPPMHalf, Parts: 1, Residual: 60}}},
		{"two idle lanes: the two largest", CutInput{Members: members([]uint32{1, 1, 4}, []uint32{1, 1, 2}),
			Held: []CutHeld{small, mid, big}, Now: cutT0, Interval: time.Second},
			[]CutAsk{{Split: "big", Owner: "w0", Epoch: 2, Counter: 1, KeepPPM: KeepPPMHalf, Parts: 1, Residual: 450},
				{Split: "mid", Owner: "w1", Epoch: 1, Counter: 1, KeepPPM: 672223, Parts: 1, Residual: 98}}},
		{"the tenancy's third cut", CutInput{Members: members([]uint32{2, 2}, []uint32{1, 0}),
			Held: []CutHeld{{Split: "big", Owner: "w0", Epoch: 2, Remaining: 900, Reported: true, Cuts: 2}}, Now: cutT0},
			[]CutAsk{{Split: "big", Owner: "w0", Epoch: 2, Counter: 3, KeepPPM: 250_000, Parts: 3, Residual: 225}}},
		{"runnable work left: no cut", CutInput{Members: members([]uint32{2, 2}, []uint32{1, 0}),
			Held: []CutHeld{big}, Unheld: []uint64{1, 1, 1}, Now: cutT0}, nil},
		{"no free lane: no cut", CutInput{Members: members([]uint32{1, 1}, []uint32{1, 1}),
			Held: []CutHeld{big, mid}, Now: cutT0}, nil},
		{"within the interval of leading: no cut", CutInput{Members: members([]uint32{2, 2}, []uint32{1, 0}),
			Held: []CutHeld{big}, Now: cutT0, LeadingSince: cutT0.Add(-time.Second), Interval: 2 * time.Second}, nil},
		{"interval passed", CutInput{Members: members([]uint32{2, 2}, []uint32{1, 0}),
			Held: []CutHeld{big}, Now: cutT0, LeadingSince: cutT0.Add(-2 * time.Second), Interval: 2 * time.Second},
			[]CutAsk{{Split: "big", Owner: "w0", Epoch: 2, Counter: 1, KeepPPM: 250_000, Parts: 3, Residual: 225}}},
		{"negative interval: never", CutInput{Members: members([]uint32{2, 2}, []uint32{1, 0}),
			Held: []CutHeld{big}, Now: cutT0, Interval: -1}, nil},
		{"idle lanes promised to a residual asked for: fewer parts", CutInput{Members: members([]uint32{2, 2}, []uint32{1, 0}),
			Held: []CutHeld{big}, Pending: 1, Now: cutT0, Interval: time.Second, MinWeight: 10},
			[]CutAsk{{Split: "big", Owner: "w0", Epoch: 2, Counter: 1, KeepPPM: 333_334, Parts: 2, Residual: 299}}},
		{"every idle lane promised: no cut", CutInput{Members: members([]uint32{2, 2}, []uint32{1, 0}),
			Held: []CutHeld{big}, Pending: 3, Now: cutT0, Interval: time.Second}, nil},
		{"residual below the minimum", CutInput{Members: members([]uint32{2, 2}, []uint32{1, 0}),
			Held: []CutHeld{small}, Now: cutT0, MinWeight: 6}, nil},
		{"outstanding request: not again", CutInput{Members: members([]uint32{2, 2}, []uint32{1, 0}),
			Held: []CutHeld{{Split: "big", Owner: "w0", Epoch: 2, Remaining: 900, Reported: true, Outstanding: true}}, Now: cutT0}, nil},
		{"no estimate: not cut", CutInput{Members: members([]uint32{2, 2}, []uint32{1, 0}),
			Held: []CutHeld{{Split: "big", Owner: "w0", Epoch: 2, Remaining: 900}}, Now: cutT0}, nil},
		{"not above the per-lane share", CutInput{Members: members([]uint32{4}, []uint32{1}),
			Held: []CutHeld{{Split: "a", Owner: "w0", Epoch: 1, Remaining: 50, Reported: true}}, Unheld: []uint64{1000}, Now: cutT0}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := DecideCuts(tc.in)
			checkCuts(t, tc.in, got)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("DecideCuts = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestCutOfKeepsALanesShare: when the split is under twice the per-lane
// share, the primary keeps exactly that share (rounded up to a millionth).
func TestCutOfKeepsALanesShare(t *testing.T) {
	keep, residual, ok := CutOf(300, 200, 1)
	if !ok || keep != 666_667 || residual != 99 {
		t.Fatalf("CutOf(300, 200, 1) = %d, %d, %v; want 666667, 99, true", keep, residual, ok)
	}
}
