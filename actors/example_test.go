package actors_test

import (
	"context"
	"fmt"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/store/memstore"
)

// onePlan is a Planner with a fixed, final plan.
type onePlan struct{ ids []coordination.SplitID }

func (onePlan) Fingerprint() string { return "example:v1" }

func (p onePlan) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	plan := coordination.SplitPlan{Finality: coordination.PlanFinal}
	for _, id := range p.ids {
		plan.Splits = append(plan.Splits, coordination.PlannedSplit{Spec: coordination.SplitSpec{ID: id}})
	}
	return plan, nil
}

// ExampleSpawn runs one worker through a small bounded job: it gains the
// split, commits it completed, and receives the verdict.
func ExampleSpawn() {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		panic(err)
	}
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "worker-1"
	st := memstore.New(cfg.LeaseDuration)
	c, err := actors.Spawn(e, st, cfg)
	if err != nil {
		panic(err)
	}
	w := coordination.NewWaker()
	c.SetWaker(w)
	if err := c.Start(onePlan{ids: []coordination.SplitID{"part-0"}}); err != nil {
		panic(err)
	}
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case <-w.C():
		case <-deadline:
			panic("no verdict")
		}
		evs, err := c.Poll()
		if err != nil {
			panic(err)
		}
		for _, ev := range evs {
			switch ev := ev.(type) {
			case coordination.Gained:
				fmt.Println("gained", ev.Split.ID, "at epoch", ev.Epoch)
				if err := c.Commit(ev.Split.ID, coordination.SplitProgress{Watermark: 100, Completed: true}); err != nil {
					panic(err)
				}
			case coordination.AllComplete:
				fmt.Println("all complete")
				done = true
			}
		}
	}
	if err := c.Depart(); err != nil {
		panic(err)
	}
	// Output:
	// gained part-0 at epoch 1
	// all complete
}
