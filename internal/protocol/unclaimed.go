package protocol

import "time"

// unclaimedBackoff caps the doubling of a penalty: the k-th penalty in a
// row lasts bound × 2^min(k−1, unclaimedBackoff), so at most four bounds.
// Longer would keep a worker that recovered from a long stall idle for
// longer; shorter would let a presence that never claims stall a split on
// probation more often.
const unclaimedBackoff = 2

// ClaimWatch is the leader's record of one member session under the
// unclaimed rule (docs/protocol.md, "Assignment and the rebalance delay",
// "Members that do not claim"): a member that leaves splits published to it
// unclaimed for a whole bound while it has a free lane loses its free lanes
// (is *penalised*: its lanes are the splits it holds) until it claims. A
// penalty lasts one bound, doubling with each penalty in a row up to four
// bounds; after it the member is *on probation*, with one free lane, until
// it claims (good standing again, every lane back) or leaves a split
// unclaimed for a bound again (the next penalty).
//
// A member that claims within the bound of being given work is never
// penalised; nor is one whose lanes are full (it is not waiting), nor one
// whose published splits are still held by another live session (in
// transit). The zero value is a member in good standing that is not
// waiting. ClaimWatch is a value: its methods return the next one and do no
// I/O.
type ClaimWatch struct {
	// Waiting is when the member's current wait began: the first
	// observation of it with a published split no live session holds and a
	// free lane, since it last claimed, was last seen not waiting, or its
	// last penalty ended. Zero when it is not waiting.
	Waiting time.Time
	// Strikes counts the penalties since the member last claimed; 0 for a
	// member in good standing.
	Strikes int
	// Penalised reports that the latest penalty lasts until Until; a member
	// with Strikes > 0 that is not penalised is on probation.
	Penalised bool
	// Until is when the latest penalty ends; zero before the first one.
	Until time.Time
}

// Observe returns w after an observation at now: waiting reports that the
// member has a split published to it that no live session holds, and a
// free lane under [ClaimWatch.Lanes]. A wait that lasted bound is penalised;
// a penalty whose Until passed turns into probation. A bound <= 0 turns the
// rule off (the zero ClaimWatch).
func (w ClaimWatch) Observe(now time.Time, waiting bool, bound time.Duration) ClaimWatch {
	if bound <= 0 {
		return ClaimWatch{}
	}
	if w.Penalised {
		if now.Before(w.Until) {
			w.Waiting = time.Time{}
			return w
		}
		w.Penalised = false // on probation from here
	}
	switch {
	case !waiting:
		w.Waiting = time.Time{}
	case w.Waiting.IsZero():
		w.Waiting = now
	case now.Sub(w.Waiting) >= bound:
		w.Strikes++
		w.Penalised, w.Until, w.Waiting = true, now.Add(bound<<min(w.Strikes-1, unclaimedBackoff)), time.Time{}
	}
	return w
}

// Claim returns w after a claim by the member's session observed at now:
// good standing, and a wait under way starts again at now.
func (w ClaimWatch) Claim(now time.Time) ClaimWatch {
	if w.Waiting.IsZero() {
		return ClaimWatch{}
	}
	return ClaimWatch{Waiting: now}
}

// Lanes returns the lanes the assignment and the cutter count for a member
// whose own budget is budget and who holds held splits: budget in good
// standing, held while penalised (no free lane: it keeps what it holds and
// is given nothing new), held + 1 on probation; never above budget.
func (w ClaimWatch) Lanes(budget, held int) int {
	switch {
	case w.Strikes == 0:
		return budget
	case w.Penalised:
		return min(budget, held)
	}
	return min(budget, held+1)
}
