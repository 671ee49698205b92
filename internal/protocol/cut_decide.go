package protocol

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/spate-go/coordination"
)

// The leader's decision to cut running splits (docs/protocol.md, "Runtime
// split", "Who decides"): only when the fleet would otherwise idle, the
// largest remaining work first, never leaving a residual below the minimum,
// each split at most once per interval, never more residuals than lanes idle.

// KeepPPMHalf is the least share of its remaining work a cut leaves the
// primary, in millionths: a cut at most halves what remains.
const KeepPPMHalf = 500_000

// keepPPMMax is the most a cut leaves the primary: something must be cut.
const keepPPMMax = 999_999

// CutMember is one live member as [DecideCuts] sees it.
type CutMember struct {
	// Instance is the member's instance id.
	Instance string
	// Budget is its lane budget, clamped as for the assignment.
	Budget uint32
	// Held is how many of its lanes are taken: the splits its live session
	// holds, and those in transit to it (assigned to it, still held by
	// another live session), whose lane is reserved for them.
	Held uint32
}

// CutHeld is one split a live session holds.
type CutHeld struct {
	// Split is the split's id.
	Split coordination.SplitID
	// Owner is the holding instance.
	Owner string
	// Epoch is the holding tenancy's epoch, as its split record names it.
	Epoch uint64
	// Remaining is the owner's estimate of the split's remaining work, in
	// the split's weight units, as its presence reported it for Epoch.
	Remaining uint64
	// Reported is false when the owner reported no estimate for this
	// tenancy (a source that cannot split, or a split outside its few
	// largest): such a split is not cut and counts 0 towards the job's
	// remaining work.
	Reported bool
	// Outstanding is true while a cut request for the split is outstanding
	// (not every residual it asks for seen yet, and the request younger than
	// the interval), or the split was asked less than the interval ago: its
	// estimate may predate that cut.
	Outstanding bool
	// Cuts is the highest cut counter among the residuals of this split
	// and Epoch the leader has seen; 0 when none.
	Cuts uint64
}

// CutInput is what [DecideCuts] decides from.
type CutInput struct {
	// Members are the live members.
	Members []CutMember
	// Unheld are the weights of the runnable splits no live session holds.
	Unheld []uint64
	// Held are the splits live sessions hold, each split once.
	Held []CutHeld
	// Pending is how many residuals requests still outstanding asked for
	// that the leader has not seen yet: the idle lanes already promised.
	Pending int
	// Now is the leader's clock.
	Now time.Time
	// LeadingSince is when this leader started leading: it asks nothing
	// within Interval of it, so a failover never doubles the rate at which
	// a split is cut; zero means no such bound.
	LeadingSince time.Time
	// Interval is the least time between two requests for one split (the
	// caller marks a split asked within it Outstanding); negative means
	// never cut.
	Interval time.Duration
	// MinWeight is the least residual worth a cut, in weight units; 0 is
	// treated as 1.
	MinWeight uint64
}

// CutAsk is one cut the leader requests of a split's owner.
type CutAsk struct {
	// Split is the split to cut.
	Split coordination.SplitID
	// Owner is the instance that holds it.
	Owner string
	// Epoch is the tenancy the request is for; the owner acts only while it
	// holds the split at this epoch.
	Epoch uint64
	// Counter is the number the cut will have in that tenancy: one more
	// than the input's Cuts. The owner acts only while its next cut has it,
	// so a request published again is not acted on twice.
	Counter uint64
	// KeepPPM is the share of the remaining work the primary keeps, in
	// millionths: KeepPPMHalf..999999 for one residual; for Parts of them,
	// an equal share, [EqualKeepPPM](Parts).
	KeepPPM uint32
	// Parts is how many residuals the owner cuts off, one after the
	// other, dividing the rest equally among them: 1, or more when more
	// lanes idle than there are splits worth a cut.
	Parts uint32
	// Residual is each residual's estimated weight, at least the input's
	// MinWeight.
	Residual uint64
}

// EqualKeepPPM is the primary's share, in millionths, when a split's
// remaining work is divided into the primary and parts residuals of equal
// size: 1/(parts+1), rounded up, so a residual is never larger than it.
func EqualKeepPPM(parts uint32) uint32 {
	return uint32((1_000_000 + uint64(parts)) / (uint64(parts) + 1))
}

// IdleLanes returns the lanes of live members that neither hold a split
// nor could be given a runnable unheld one nor a residual already asked
// for: the free lanes less the unheld splits and Pending, or 0.
func (in CutInput) IdleLanes() int {
	free := 0
	for _, m := range in.Members {
		if m.Budget > m.Held {
			free += int(m.Budget - m.Held)
		}
	}
	return max(free-len(in.Unheld)-in.Pending, 0)
}

// PerLane returns the job's remaining work per lane, T of docs/protocol.md:
// the reported estimates plus the unheld splits' weights, over every lane of
// every live member; 0 when there are no lanes.
func (in CutInput) PerLane() float64 {
	lanes := 0.0
	for _, m := range in.Members {
		lanes += float64(m.Budget)
	}
	if lanes == 0 {
		return 0
	}
	total := 0.0
	for _, w := range in.Unheld {
		total += float64(w)
	}
	for _, h := range in.Held {
		if h.Reported {
			total += float64(h.Remaining)
		}
	}
	return total / lanes
}

// CutOf returns the cut of a split with remaining work r when the job's
// remaining work per lane is perLane: the primary keeps max(1/2, perLane/r)
// in millionths (at most 999999), the residual the rest, rounded down. ok is
// false when the split is not worth cutting: r is not above perLane, or the
// residual would be below minWeight (0 counts as 1).
func CutOf(r uint64, perLane float64, minWeight uint64) (keepPPM uint32, residual uint64, ok bool) {
	if r == 0 || float64(r) <= perLane {
		return 0, 0, false
	}
	keep := math.Ceil(perLane / float64(r) * 1e6)
	keepPPM = uint32(min(max(keep, KeepPPMHalf), keepPPMMax))
	residual = residualOf(r, keepPPM)
	return keepPPM, residual, residual >= max(minWeight, 1)
}

// residualOf is r × (1e6 − keepPPM) / 1e6, rounded down, without overflow.
func residualOf(r uint64, keepPPM uint32) uint64 {
	hi, lo := bits.Mul64(r, uint64(1_000_000-keepPPM))
	q, _ := bits.Div64(hi, lo, 1_000_000)
	return q
}

// DecideCuts returns the cuts to request now, largest remaining work first,
// or nil. It asks nothing unless the rate bound allows it (Interval not
// negative, at least Interval since LeadingSince) and some lanes would idle;
// then it asks for at most [CutInput.IdleLanes] cuts, one per split, of the
// reported splits with no request outstanding in descending Remaining (ties
// by id), skipping those [CutOf] finds not worth it. Idle lanes left over
// then go one at a time to the ask whose pieces would stay largest, as
// one more part (residual) of it, while every piece of it (the primary's
// and each residual's equal share) stays at least the per-lane share and
// MinWeight: so a fleet whose lanes all ran dry but for one split divides
// it among them in one evaluation instead of halving it once per interval.
// Parts of all asks never exceed the idle lanes, nor one ask's
// [CutPartsMax]. It is deterministic and
// does not depend on the order of its inputs.
func DecideCuts(in CutInput) []CutAsk {
	if in.Interval < 0 || !in.LeadingSince.IsZero() && in.Now.Before(in.LeadingSince.Add(in.Interval)) {
		return nil
	}
	idle := in.IdleLanes()
	if idle == 0 {
		return nil
	}
	cands := make([]CutHeld, 0, len(in.Held))
	for _, h := range in.Held {
		if h.Reported && !h.Outstanding {
			cands = append(cands, h)
		}
	}
	slices.SortFunc(cands, func(a, b CutHeld) int {
		return cmp.Or(cmp.Compare(b.Remaining, a.Remaining), cmp.Compare(a.Split, b.Split))
	})
	perLane := in.PerLane()
	var asks []CutAsk
	for _, h := range cands {
		if len(asks) == idle {
			break
		}
		if h.Cuts == math.MaxUint64 {
			continue // the tenancy cuts no more (NextCut)
		}
		keep, residual, ok := CutOf(h.Remaining, perLane, in.MinWeight)
		if !ok {
			continue
		}
		asks = append(asks, CutAsk{Split: h.Split, Owner: h.Owner, Epoch: h.Epoch, Counter: h.Cuts + 1, KeepPPM: keep, Parts: 1, Residual: residual})
	}
	spread(asks, cands, idle, perLane, max(in.MinWeight, 1))
	return asks
}

// spread gives the idle lanes the asks leave over to them as more parts,
// one at a time, to the ask whose pieces would then be largest (ties by
// split), while those pieces stay at least perLane and minWeight and the
// ask has fewer than CutPartsMax parts. cands
// holds the asks' splits' estimates.
func spread(asks []CutAsk, cands []CutHeld, idle int, perLane float64, minWeight uint64) {
	remaining := map[coordination.SplitID]uint64{}
	for _, h := range cands {
		remaining[h.Split] = h.Remaining
	}
	piece := func(a CutAsk) uint64 { return equalPiece(remaining[a.Split], a.Parts+1) } // each residual with one part more
	for left := idle - len(asks); left > 0; left-- {
		best := -1
		for i, a := range asks {
			if p := piece(a); a.Parts < CutPartsMax && p >= minWeight && float64(p) >= perLane && (best < 0 || p > piece(asks[best])) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		a := &asks[best]
		a.Parts++
		a.KeepPPM = EqualKeepPPM(a.Parts)
		a.Residual = residualOf(remaining[a.Split], a.KeepPPM) / uint64(a.Parts)
	}
}

// equalPiece is each residual's weight when remaining work r is divided
// into the primary and parts equal residuals: what the ask's Residual
// says, rounded down as it is.
func equalPiece(r uint64, parts uint32) uint64 {
	return residualOf(r, EqualKeepPPM(parts)) / uint64(parts)
}
