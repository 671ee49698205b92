package driver_test

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/testkit"
)

// rowSource is a tiny in-memory Source: a split's descriptor is its row
// count, and a lane "reads" rows by handing out their numbers.
type rowSource struct {
	driver.SourceDefaults
	lanes map[coordination.SplitID]*rowLane
}

type rowLane struct {
	rows int64 // rows in the split
	next int64 // next row to read
}

func (s *rowSource) OpenSplit(o driver.Opening) error {
	rows, err := strconv.ParseInt(string(o.Split.Descriptor), 10, 64)
	if err != nil {
		return err
	}
	l := &rowLane{rows: rows}
	if o.Resume != nil {
		l.next = o.Resume.Watermark // resume exactly at the committed cut
	}
	s.lanes[o.Split.ID] = l
	return nil
}

func (s *rowSource) EncodeCommit(split coordination.SplitID, w int64) (coordination.SplitProgress, error) {
	return coordination.SplitProgress{Watermark: w, Completed: w == s.lanes[split].rows}, nil
}

func (s *rowSource) Sweep(coordination.SplitID) (*coordination.SplitProgress, error) {
	return nil, nil
}

func (s *rowSource) CloseSplit(split coordination.SplitID) { delete(s.lanes, split) }

type rowPlanner struct{}

func (rowPlanner) Fingerprint() string { return "rows-v1" }
func (rowPlanner) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	return coordination.SplitPlan{Finality: coordination.PlanFinal}, nil
}

// A control loop over the driver. The scripted coordinator stands in for a
// real one: it hands this worker two splits, one of them half done, and
// declares the job complete once both are committed.
func ExampleNew() {
	c, script := testkit.NewScripted()
	src := &rowSource{lanes: map[coordination.SplitID]*rowLane{}}
	d := driver.New(c, src)
	if err := d.Start(rowPlanner{}); err != nil {
		fmt.Println(err)
		return
	}
	script.Gain(coordination.SplitSpec{ID: "s1", Descriptor: []byte("3"), Weight: 1}, 1, nil)
	script.Gain(coordination.SplitSpec{ID: "s2", Descriptor: []byte("4"), Weight: 1}, 6,
		&coordination.SplitProgress{Watermark: 2})

	for {
		ev, err := d.PollEvents(time.Second)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch ev := ev.(type) {
		case driver.LanesAdded:
			var acked []driver.Watermark
			for _, lane := range ev.Lanes {
				l := src.lanes[lane.Split.ID]
				for ; l.next < l.rows; l.next++ {
					fmt.Printf("%s row %d\n", lane.Split.ID, l.next)
				}
				acked = append(acked, driver.Watermark{Partition: lane.Partition, Value: l.next})
			}
			if err := d.Commit(acked); err != nil {
				fmt.Println("commit:", err)
				return
			}
		case driver.LanesRetired:
			fmt.Println("retired", len(ev.Lanes), "lanes")
			if len(d.Assignments()) == 0 {
				script.AllComplete()
			}
		case driver.Drained:
			fmt.Println("drained")
			fmt.Println("shutdown:", d.Shutdown(nil))
			fmt.Println("commits:", script.Commits())
			fmt.Println("departed:", script.Departed())
			return
		}
	}
	// Output:
	// s1 row 0
	// s1 row 1
	// s1 row 2
	// s2 row 2
	// s2 row 3
	// retired 2 lanes
	// drained
	// shutdown: <nil>
	// commits: [{s1 {3 [] true}} {s2 {4 [] true}}]
	// departed: true
}
