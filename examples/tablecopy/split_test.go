package main

import (
	"slices"
	"testing"

	"github.com/spate-go/coordination/driver"
)

func TestAPageInFlightDuringACutKeepsOnlyTheLanesRows(t *testing.T) {
	l := &lane{keys: idRange{Lo: 0, Hi: 100}, weight: 1000}
	l.hi.Store(100)
	l.hi.Store(40) // the cut, made while the page [30, 60) was read
	rows, next := l.take([][]any{{int64(30)}, {int64(39)}, {int64(40)}, {int64(55)}}, 60)
	var ids []int64
	for _, r := range rows {
		ids = append(ids, r[0].(int64))
	}
	if !slices.Equal(ids, []int64{30, 39}) || next != 40 || l.taken != 40 {
		t.Fatalf("take = %v, next %d, taken %d; want [30 39], 40, 40", ids, next, l.taken)
	}
}

func TestACutStartsAfterWhatTheReaderTookAndEstimatesByKeyShare(t *testing.T) {
	l := &lane{id: 1, keys: idRange{Table: "t", Lo: 0, Hi: 1000}, weight: 10_000}
	l.hi.Store(1000)
	l.acked.Store(100)
	l.taken = 200 // a page [100, 200) is being written
	s := &source{byID: map[driver.LaneID]*lane{1: l}, pager: &pager{limit: 50}, tally: &tally{}}
	if r := s.Remaining(1); r != 9000 {
		t.Fatalf("Remaining = %d, want 9000 (900 of 1000 keys of 10000 rows)", r)
	}
	cut, ok, err := s.TrySplit(1, 0.5)
	if err != nil || !ok {
		t.Fatalf("TrySplit = %v, %v", ok, err)
	}
	if string(cut.Primary) != `{"table":"t","lo":0,"hi":600}` || string(cut.Residual) != `{"table":"t","lo":600,"hi":1000}` || cut.ResidualWeight != 4000 || l.hi.Load() != 600 {
		t.Fatalf("cut %s | %s weight %d, lane end %d; want the keys from 600 cut off (after the page taken up to 200)", cut.Primary, cut.Residual, cut.ResidualWeight, l.hi.Load())
	}
	l.hi.Store(205)
	if _, ok, _ := s.TrySplit(1, 0.5); ok {
		t.Fatal("TrySplit cut off less than a page's worth of rows")
	}
}
