package lanes

import (
	"math"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
)

// Remaining estimates the lane's remaining work in its split's weight
// units: the weight of the range from its next position to its end, by
// interpolation; 0 when the lane is done, draining or stopped.
func (s *Source[P]) Remaining(id driver.LaneID) uint64 {
	r := s.running([]driver.LaneID{id})
	if len(r) == 0 {
		return 0
	}
	l := &r[0].Lane
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending.done || l.stopped || l.draining {
		return 0
	}
	left := 1 - l.k.fraction(l.start, l.nextLocked(), l.end)
	return uint64(math.Ceil(left * float64(l.weight)))
}

// TrySplit cuts the lane's range at a position past everything claimed
// (so never inside a batch in hand), about keep of the way from the lane's
// next position to its end. The primary keeps the range's start and the
// weight of its part; the residual is the rest. It refuses (!ok) a lane
// done, draining or stopped, and a residual of fewer than
// [Options.MinResidual] positions (offset lanes), and a lane
// [Options.NoCut] says is not to be cut.
func (s *Source[P]) TrySplit(id driver.LaneID, keep float64) (driver.Cut, bool, error) {
	r := s.running([]driver.LaneID{id})
	if len(r) == 0 {
		return driver.Cut{}, false, nil
	}
	l := &r[0].Lane
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending.done || l.stopped || l.draining || s.opts.NoCut != nil && s.opts.NoCut(l.meta) {
		return driver.Cut{}, false, nil
	}
	next := l.nextLocked()
	at, ok := l.k.between(next, l.end, keep)
	if !ok || !l.k.span(at, l.end, s.opts.MinResidual) {
		return driver.Cut{}, false, nil
	}
	share := 1 - l.k.fraction(l.start, at, l.end)
	residualWeight := uint64(math.Round(share * float64(l.weight)))
	residualWeight = min(max(residualWeight, 1), max(l.weight, 2)-1)
	primaryWeight := max(l.weight-residualWeight, 1)
	cut := coordination.Cut{
		Primary:        encodeDescriptor(l.k, descriptor[P]{rng: Range[P]{Start: l.start, End: at}, weight: primaryWeight, meta: l.meta}),
		Residual:       encodeDescriptor(l.k, descriptor[P]{rng: Range[P]{Start: at, End: l.end}, weight: residualWeight, meta: l.meta}),
		ResidualWeight: residualWeight,
	}
	l.end, l.weight = at, primaryWeight
	l.cuts++
	return cut, true, nil
}

// nextLocked is [Lane.Next] with l.mu held.
func (l *Lane[P]) nextLocked() P { return l.nextOf(l.pending) }
