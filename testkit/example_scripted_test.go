package testkit_test

import (
	"context"
	"fmt"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/testkit"
)

type examplePlanner struct{}

func (examplePlanner) Fingerprint() string { return "example" }
func (examplePlanner) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	return coordination.SplitPlan{Finality: coordination.PlanFinal}, nil
}

// The script queues events and outcomes; the code under test drives the
// coordinator; the script then reports what that code did.
func ExampleNewScripted() {
	c, script := testkit.NewScripted()
	w := coordination.NewWaker()
	c.SetWaker(w)
	_ = c.Start(examplePlanner{})

	script.Gain(coordination.SplitSpec{ID: "s1", Weight: 1}, 1, nil)
	script.Gain(coordination.SplitSpec{ID: "s2", Weight: 1}, 4, &coordination.SplitProgress{Watermark: 10})
	script.FailNextCommit("s2", coordination.Fenced)

	<-w.C() // every queueing call wakes; the wakes collapse into one
	events, _ := c.Poll()
	for _, ev := range events {
		g := ev.(coordination.Gained)
		fmt.Println("gained", g.Split.ID, "epoch", g.Epoch)
	}
	fmt.Println(c.Commit("s1", coordination.SplitProgress{Watermark: 5}))
	fmt.Println(c.Commit("s2", coordination.SplitProgress{Watermark: 20}))
	fmt.Println(c.Depart("s1"))

	fmt.Println("commits:", script.Commits())
	fmt.Println("departed with:", script.DepartedWith())
	// Output:
	// gained s1 epoch 1
	// gained s2 epoch 4
	// <nil>
	// coordination error (fenced): scripted fenced for split s2
	// <nil>
	// commits: [{s1 {5 [] false}}]
	// departed with: [s1]
}
