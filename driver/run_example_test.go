package driver_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/testkit"
)

// countSource "reads" a split whose descriptor is its row count. Its lanes
// read everything at once in StartLanes; a real source starts a reader
// goroutine per lane there and stops it in StopLanes.
type countSource struct {
	driver.SourceDefaults
	rows      map[coordination.SplitID]int64
	acked     map[driver.PartitionID]int64
	finishing []coordination.SplitID
	waker     *coordination.Waker
	open      int    // started lanes not yet stopped
	allDone   func() // called when the last lane stops
}

func (s *countSource) OpenSplit(o driver.Opening) error {
	rows, err := strconv.ParseInt(string(o.Split.Descriptor), 10, 64)
	if err != nil {
		return err
	}
	s.rows[o.Split.ID] = rows
	s.acked[o.Partition] = 0
	if o.Resume != nil {
		s.acked[o.Partition] = o.Resume.Watermark // reading starts at the committed cut
	}
	s.waker = o.Waker
	return nil
}

func (s *countSource) EncodeCommit(split coordination.SplitID, w int64) (coordination.SplitProgress, error) {
	return coordination.SplitProgress{Watermark: w, Completed: w == s.rows[split]}, nil
}

func (s *countSource) Sweep(coordination.SplitID) (*coordination.SplitProgress, error) {
	return nil, nil
}

func (s *countSource) CloseSplit(split coordination.SplitID) { delete(s.rows, split) }

func (s *countSource) TakeFinishing() []coordination.SplitID {
	f := s.finishing
	s.finishing = nil
	return f
}

func (s *countSource) StartLanes(lanes []driver.Lane) {
	for _, l := range lanes {
		s.open++
		rows := s.rows[l.Split.ID]
		fmt.Printf("%s: rows %d to %d\n", l.Split.ID, s.acked[l.Partition], rows)
		s.acked[l.Partition] = rows
		s.finishing = append(s.finishing, l.Split.ID)
	}
	s.waker.Wake() // end of input: commit now
}

func (s *countSource) StopLanes(lanes []driver.LaneID) {
	s.open -= len(lanes)
	if s.open == 0 {
		s.allDone()
	}
}

func (s *countSource) Acked() []driver.Watermark {
	var ws []driver.Watermark
	for p, v := range s.acked {
		ws = append(ws, driver.Watermark{Partition: p, Value: v})
	}
	slices.SortFunc(ws, func(a, b driver.Watermark) int { return cmp.Compare(a.Partition, b.Partition) })
	return ws
}

// Run is the whole control loop. The scripted coordinator stands in for a
// real one: it hands this worker two splits, one of them half done, and
// declares the job complete once both lanes have finished.
func ExampleRun() {
	c, script := testkit.NewScripted()
	src := &countSource{
		rows:    map[coordination.SplitID]int64{},
		acked:   map[driver.PartitionID]int64{},
		allDone: script.AllComplete,
	}
	script.Gain(coordination.SplitSpec{ID: "s1", Descriptor: []byte("3"), Weight: 1}, 1, nil)
	script.Gain(coordination.SplitSpec{ID: "s2", Descriptor: []byte("4"), Weight: 1}, 6,
		&coordination.SplitProgress{Watermark: 2})

	err := driver.Run(context.Background(), c, src,
		driver.WithPlanner(rowPlanner{}), driver.WithCommitInterval(time.Minute))
	fmt.Println("run:", err)
	fmt.Println("commits:", script.Commits())
	fmt.Println("departed:", script.Departed())
	// Output:
	// s1: rows 0 to 3
	// s2: rows 2 to 4
	// run: <nil>
	// commits: [{s1 {3 [] true}} {s2 {4 [] true}}]
	// departed: true
}
