package main

import (
	"github.com/spate-go/coordination/driver"
)

// The source's runtime split (driver.Splitter): a lane's record range is
// cut at a record number, the lane keeps the records before the cut and
// the rest becomes a new split, read by whichever worker the leader gives
// it to. Weights are record counts, so a lane's remaining work is simply
// the records it has not yet acknowledged.

// take hands the reader its next batch from pos, at most batch records and
// never past the lane's end, and returns one past its last record. Under
// cutMu, so a cut never lands inside a batch the reader has taken.
func (l *lane) take(pos, batch int64) int64 {
	l.cutMu.Lock()
	defer l.cutMu.Unlock()
	end := min(pos+batch, l.end.Load())
	l.taken = max(l.taken, end)
	return end
}

// laneByID returns the open lane with id, or nil.
func (s *source) laneByID(id driver.LaneID) *lane {
	for _, l := range s.lanes {
		if l.id == id {
			return l
		}
	}
	return nil
}

// Remaining returns the lane's records not yet acknowledged: its remaining
// work in the splits' weight units.
func (s *source) Remaining(id driver.LaneID) uint64 {
	l := s.laneByID(id)
	if l == nil || s.noCut || l.draining.Load() {
		return 0
	}
	return uint64(max(0, l.end.Load()-l.acked.Load()))
}

// TrySplit cuts the lane so that it keeps about keep of the records it has
// not yet taken: from the cut on, the records are the residual's. It
// refuses when the residual would be shorter than two batches (not worth
// a lane's start), when the lane is draining, or with -runtime-split=false.
func (s *source) TrySplit(id driver.LaneID, keep float64) (driver.Cut, bool, error) {
	l := s.laneByID(id)
	if l == nil || s.noCut || l.draining.Load() {
		return driver.Cut{}, false, nil
	}
	l.cutMu.Lock()
	defer l.cutMu.Unlock()
	from, end := max(l.taken, l.acked.Load()), l.end.Load()
	at := from + int64(keep*float64(end-from))
	if end-at < 2*s.pace.batch || at <= from {
		return driver.Cut{}, false, nil
	}
	l.end.Store(at)
	return driver.Cut{
		Primary:        encodeDescriptor(recordRange{Start: l.records.Start, End: at}),
		Residual:       encodeDescriptor(recordRange{Start: at, End: end}),
		ResidualWeight: uint64(end - at),
	}, true, nil
}

var _ driver.Splitter = (*source)(nil)
