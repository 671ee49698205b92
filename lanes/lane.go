package lanes

import (
	"fmt"
	"sync"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
)

// Lane is one held split being read, as the read function sees it: where
// to read from, where the range ends now, and Claim. Its methods are safe
// for the lane's reader; the kit's other goroutines (the driver's) share
// it through the lane's mutex.
type Lane[P Position] struct {
	k         kind[P]
	split     coordination.SplitID
	partition driver.PartitionID // Acked reports the lane under it
	waker     *coordination.Waker
	start     P      // the range's first position; fixed
	meta      []byte // the user's descriptor bytes; fixed
	// epoch is the tenancy's fencing token; fixed (txcommit.go).
	epoch coordination.LeaseEpoch

	mu       sync.Mutex
	end      P             // guarded by mu: one past the range's last position; a cut lowers it
	weight   uint64        // guarded by mu: the weight of [start, end)
	cuts     int           // guarded by mu: how many cuts lowered end
	pending  mark[P]       // guarded by mu: through the last successful claim
	acked    mark[P]       // guarded by mu: everything processed
	paused   chan struct{} // guarded by mu: non-nil while paused; closed by resume
	stopped  bool          // guarded by mu: StopLanes or CloseSplit: claims fail, ctx is cancelled
	draining bool          // guarded by mu: BeginRevoke: claims fail at the next boundary
	badClaim error         // guarded by mu: a claim out of order, returned as the read's error
	wake     chan struct{} // guarded by mu: closed and replaced on stop and drain, to end a pause
}

// Split returns the id of the split the lane reads.
func (l *Lane[P]) Split() coordination.SplitID { return l.split }

// Meta returns the user's descriptor bytes of the split ([Split.Meta]).
// The caller must not modify them.
func (l *Lane[P]) Meta() []byte { return l.meta }

// Start returns the first position of the split's range, as planned (a
// residual's starts at its cut).
func (l *Lane[P]) Start() P { return l.start }

// End returns one past the lane's last position now: a runtime cut lowers
// it, never below what was claimed. For keys an empty End means the end of
// the key space. A reader may bound its reads by it (a query's upper
// bound); Claim enforces it either way.
func (l *Lane[P]) End() P {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.end
}

// Next returns the first position the lane has not claimed: the range's
// start, the resume point, or just past the last claim. Reading positions
// at or after Next never skips a record. For keys it is the last claimed
// key with a zero byte appended; [Lane.Last] gives the key itself, for a
// reader that asks for keys greater than it.
func (l *Lane[P]) Next() P {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nextLocked()
}

// Last returns the last position the lane claimed and true, or false when
// nothing was claimed yet in the split (a reader then starts at
// [Lane.Start]). It survives moves: a lane resumed elsewhere reports the
// claim its predecessor committed.
func (l *Lane[P]) Last() (P, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pending.last, l.pending.claimed
}

// nextOf returns the first position after m.
func (l *Lane[P]) nextOf(m mark[P]) P {
	if m.claimed {
		return l.k.after(m.last)
	}
	return l.start
}

// Claim claims every position up to and including p, before the reader
// processes the records there; it also acknowledges everything claimed
// before, which the reader has processed by the time it claims again. A
// reader claims each record's position (or a batch's last position) in
// increasing order, then processes it. A batch holds only records below
// [Lane.End] as it was when the batch was read: the records at or past it
// belong to another split. If a runtime cut lowered the end meanwhile, the
// batch's claim fails, and the kit calls the read function again from its
// last claim with the new end, so the records below the cut are read.
//
// false means the lane's range ended before p, or the lane is stopping
// (end of input at the range's end, a runtime cut, a cooperative drain, a
// stop): nothing was claimed and the read function returns nil. Positions
// must increase; a claim at or below the last one returns false and ends
// the read with an error. While the lane is paused, Claim waits.
func (l *Lane[P]) Claim(p P) bool {
	l.mu.Lock()
	for l.paused != nil && !l.stopped && !l.draining {
		paused, wake := l.paused, l.wake
		l.mu.Unlock()
		select {
		case <-paused:
		case <-wake:
		}
		l.mu.Lock()
	}
	l.acked, l.pending = l.pending, l.acked // the previous claim is processed
	ok := !l.stopped && !l.draining && l.k.beforeEnd(p, l.end)
	if ok && (l.acked.claimed && !l.k.less(l.acked.last, p) || !l.acked.claimed && l.k.less(p, l.start)) {
		l.badClaim = fmt.Errorf("lanes: split %s: claimed %s %s below the lane's next position %s; claim positions in increasing order from Lane.Next", l.split, l.k.name(), l.k.show(p), l.k.show(l.nextOf(l.acked)))
		ok = false
	}
	if ok {
		l.pending = mark[P]{last: l.k.assign(l.pending.last, p), claimed: true, seq: l.acked.seq + 1}
	} else {
		l.pending = l.acked.copyInto(l.k, l.pending)
	}
	l.mu.Unlock()
	return ok
}
