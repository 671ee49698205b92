package main

import (
	"github.com/spate-go/coordination/driver"
)

// The source's runtime split (driver.Splitter): a lane's key range is cut
// at a key, the lane keeps the keys before it and the rest becomes a new
// split that any worker copies from its start. A split's weight is its
// planned row count, so the lane's remaining work is estimated as the share
// of its weight its remaining keys are (keys are ids: no query needed).

// take clips a page the reader read against a cut made while it was in
// flight (only its rows before the lane's end are the lane's) and records
// how far the reader has taken the range, all under cutMu, so a cut never
// lands inside a page the lane will write.
func (l *lane) take(rows [][]any, next int64) ([][]any, int64) {
	l.cutMu.Lock()
	defer l.cutMu.Unlock()
	if hi := l.hi.Load(); next > hi {
		keep := rows[:0]
		for _, r := range rows {
			if r[0].(int64) < hi {
				keep = append(keep, r)
			}
		}
		rows, next = keep, hi
	}
	l.taken = max(l.taken, next)
	return rows, next
}

// estimate returns the lane's estimated rows among the keys [lo, hi).
func (l *lane) estimate(lo, hi int64) uint64 {
	width := l.keys.Hi - l.keys.Lo
	if hi <= lo || width <= 0 {
		return 0
	}
	return uint64(float64(l.weight) * float64(hi-lo) / float64(width))
}

// Remaining estimates the rows of the lane's keys not yet copied.
func (s *source) Remaining(id driver.LaneID) uint64 {
	l := s.byID[id]
	if l == nil || l.draining.Load() {
		return 0
	}
	return l.estimate(l.acked.Load(), l.hi.Load())
}

// TrySplit cuts the lane's keys so that it keeps about keep of the keys it
// has not yet taken; the keys from the cut on are the residual's. It
// refuses a residual of less than a page's worth of estimated rows, and a
// draining lane.
func (s *source) TrySplit(id driver.LaneID, keep float64) (driver.Cut, bool, error) {
	l := s.byID[id]
	if l == nil || l.draining.Load() {
		return driver.Cut{}, false, nil
	}
	l.cutMu.Lock()
	defer l.cutMu.Unlock()
	from, hi := max(l.taken, l.acked.Load()), l.hi.Load()
	at := from + int64(keep*float64(hi-from))
	residual := l.estimate(at, hi)
	if at <= from || at >= hi || residual < uint64(s.pager.limit) {
		return driver.Cut{}, false, nil
	}
	l.hi.Store(at)
	s.tally.cuts.Add(1)
	return driver.Cut{
		Primary:        encodeRange(idRange{Table: l.keys.Table, Lo: l.keys.Lo, Hi: at}),
		Residual:       encodeRange(idRange{Table: l.keys.Table, Lo: at, Hi: hi}),
		ResidualWeight: residual,
	}, true, nil
}

var _ driver.Splitter = (*source)(nil)
