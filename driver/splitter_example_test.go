package driver_test

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/spate-go/coordination/driver"
)

// keyRange is a lane reading the keys [next, end) of a numbered range, one
// per record, while a reader goroutine advances next. Its descriptor is
// "lo-hi"; weight is one unit per key.
type keyRange struct {
	mu        sync.Mutex // guards next and end against the lane's reader
	next, end int64
	lo        int64 // where the split starts (the primary starts there too)
}

// rangeSplitter is a Splitter over keyRange lanes.
type rangeSplitter struct {
	lanes map[driver.LaneID]*keyRange
}

func (s *rangeSplitter) Remaining(lane driver.LaneID) uint64 {
	l := s.lanes[lane]
	l.mu.Lock()
	defer l.mu.Unlock()
	return uint64(l.end - l.next)
}

func (s *rangeSplitter) TrySplit(lane driver.LaneID, keep float64) (driver.Cut, bool, error) {
	l := s.lanes[lane]
	l.mu.Lock()
	defer l.mu.Unlock()
	left := l.end - l.next
	cut := l.next + int64(math.Ceil(keep*float64(left)))
	if left < 2 || cut >= l.end {
		return driver.Cut{}, false, nil // too little left to cut
	}
	c := driver.Cut{
		Primary:        []byte(fmt.Sprintf("%d-%d", l.lo, cut)),
		Residual:       []byte(fmt.Sprintf("%d-%d", cut, l.end)),
		ResidualWeight: uint64(l.end - cut),
	}
	l.end = cut // the reader stops at the cut from now on
	return c, true, nil
}

func parseKeyRange(d []byte) (lo, hi int64) {
	a, b, _ := strings.Cut(string(d), "-")
	lo, _ = strconv.ParseInt(a, 10, 64)
	hi, _ = strconv.ParseInt(b, 10, 64)
	return lo, hi
}

// ExampleSplitter cuts a lane that has read 200 of its 1000 keys, keeping
// half of what remains: the primary and the residual are disjoint, cover
// the lane's range exactly, and the residual starts where the primary ends.
func ExampleSplitter() {
	var s driver.Splitter = &rangeSplitter{lanes: map[driver.LaneID]*keyRange{7: {lo: 0, next: 200, end: 1000}}}
	fmt.Println("remaining:", s.Remaining(7))
	cut, ok, err := s.TrySplit(7, 0.5)
	if err != nil || !ok {
		fmt.Println("not cut:", ok, err)
		return
	}
	plo, phi := parseKeyRange(cut.Primary)
	rlo, rhi := parseKeyRange(cut.Residual)
	fmt.Printf("primary %d-%d, residual %d-%d (weight %d)\n", plo, phi, rlo, rhi, cut.ResidualWeight)
	fmt.Println("remaining after the cut:", s.Remaining(7))
	fmt.Println("disjoint and complete:", phi == rlo && plo == 0 && rhi == 1000)
	// Output:
	// remaining: 800
	// primary 0-600, residual 600-1000 (weight 400)
	// remaining after the cut: 400
	// disjoint and complete: true
}
