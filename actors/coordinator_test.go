package actors

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
)

func TestSingleWorkerCompletesFinalPlan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		c, err := Spawn(r.e, r.st, testConfig(t, r.clk, "w1"))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(finalPlan("a", "b")); err != nil {
			t.Fatal(err)
		}
		var evs []coordination.Event
		gained := map[coordination.SplitID]coordination.Gained{}
		for i := 0; i < 40 && len(gained) < 2; i++ {
			r.advance(125 * time.Millisecond)
			collect(t, c, &evs)
			for _, ev := range evs {
				if g, ok := ev.(coordination.Gained); ok {
					gained[g.Split.ID] = g
				}
			}
		}
		if len(gained) != 2 {
			t.Fatalf("gained %v, events %v", gained, evs)
		}
		for id := range gained {
			if err := c.Commit(id, coordination.SplitProgress{Watermark: 10, Completed: true}); err != nil {
				t.Fatalf("commit %s: %v", id, err)
			}
		}
		done := false
		for i := 0; i < 40 && !done; i++ {
			r.advance(125 * time.Millisecond)
			collect(t, c, &evs)
			for _, ev := range evs {
				if _, ok := ev.(coordination.AllComplete); ok {
					done = true
				}
			}
		}
		if !done {
			t.Fatalf("no AllComplete; events %v", evs)
		}
		if _, ok := evs[len(evs)-1].(coordination.AllComplete); !ok {
			t.Fatalf("verdict is not the last event: %v", evs)
		}
		if err := c.Depart(); err != nil {
			t.Fatalf("Depart: %v", err)
		}
	})
}
