package driver_test

import (
	"encoding/binary"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
)

// TestTableSourcePausesResumesAndStopsItsReaders drives the reader
// goroutine of ExampleSourceReader's source by hand, in a synctest bubble:
// a paused lane delivers nothing more (once the row in hand is done) until
// resumed; StopLanes of a paused lane returns with the reader gone and its
// watermark kept for the final commit; StopLanes of a lane whose reader is
// delivering returns only once that row is done.
func TestTableSourcePausesResumesAndStopsItsReaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		delivered := make(chan int64)
		s := newTableSource(func(row int64) { delivered <- row })
		spec := coordination.SplitSpec{ID: "rows-0", Descriptor: binary.BigEndian.AppendUint64(make([]byte, 8), 10)}
		if err := s.OpenSplit(driver.Opening{Split: spec, Lane: 1, Partition: 7, Waker: coordination.NewWaker()}); err != nil {
			t.Fatal(err)
		}
		lane := []driver.LaneID{1}
		next := func(want int64) {
			t.Helper()
			if row := <-delivered; row != want {
				t.Fatalf("delivered row %d, want %d", row, want)
			}
		}
		nothingMore := func(acked int64) {
			t.Helper()
			synctest.Wait() // the reader has parked
			select {
			case row := <-delivered:
				t.Fatalf("a paused or stopped lane delivered row %d", row)
			default:
			}
			if got, want := s.Acked(), []driver.Watermark{{Partition: 7, Value: acked}}; !slices.Equal(got, want) {
				t.Fatalf("Acked = %v, want %v", got, want)
			}
		}

		s.StartLanes([]driver.Lane{{ID: 1, Partition: 7, Split: spec}})
		next(0)
		synctest.Wait()    // the reader holds row 1
		s.PauseLanes(lane) // it finishes that row, then parks
		next(1)
		nothingMore(2)
		s.ResumeLanes(lane)
		next(2)
		synctest.Wait()
		s.PauseLanes(lane)
		next(3)
		nothingMore(4)
		s.StopLanes(lane) // paused: it must return all the same
		nothingMore(4)
		s.CloseSplit(spec.ID)
		if got := s.Acked(); len(got) != 0 {
			t.Fatalf("Acked after CloseSplit = %v, want nothing", got)
		}

		// A lane stopped while its reader delivers a row: StopLanes returns
		// only once the reader has finished that row and returned.
		if err := s.OpenSplit(driver.Opening{Split: spec, Lane: 2, Partition: 8, Waker: coordination.NewWaker()}); err != nil {
			t.Fatal(err)
		}
		s.StartLanes([]driver.Lane{{ID: 2, Partition: 8, Split: spec}})
		next(0)
		synctest.Wait() // the reader holds row 1
		stopped := make(chan struct{})
		go func() {
			s.StopLanes([]driver.LaneID{2})
			close(stopped)
		}()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("StopLanes returned while its reader was still delivering a row")
		default:
		}
		next(1)
		<-stopped
		synctest.Wait()
		if got, want := s.Acked(), []driver.Watermark{{Partition: 8, Value: 2}}; !slices.Equal(got, want) {
			t.Fatalf("Acked after StopLanes = %v, want %v", got, want)
		}
	})
}
