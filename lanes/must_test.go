package lanes_test

import (
	"context"
	"strings"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/lanes"
)

// TestMustPlannerIsPlanner checks that MustPlanner returns the plan
// Planner returns for the same splits.
func TestMustPlannerIsPlanner(t *testing.T) {
	splits := lanes.Offsets("rows", 0, 1000, 4)
	want, err := lanes.Planner(splits)
	if err != nil {
		t.Fatal(err)
	}
	got := lanes.MustPlanner(splits)
	if got.Fingerprint() != want.Fingerprint() {
		t.Fatalf("MustPlanner's fingerprint = %q, Planner's %q", got.Fingerprint(), want.Fingerprint())
	}
	gp, err := got.Plan(context.Background(), coordination.PlanContext{})
	if err != nil || len(gp.Splits) != len(splits) || gp.Finality != coordination.PlanFinal {
		t.Fatalf("MustPlanner's plan = %+v, %v; want %d final splits", gp, err, len(splits))
	}
}

// TestMustPlannerPanicsWithPlannersError checks that an invalid plan panics
// with the error Planner returns for it.
func TestMustPlannerPanicsWithPlannersError(t *testing.T) {
	_, want := lanes.Planner[int64](nil)
	if want == nil {
		t.Fatal("Planner accepted an empty plan")
	}
	defer func() {
		err, ok := recover().(error)
		if !ok || !strings.Contains(err.Error(), want.Error()) {
			t.Fatalf("MustPlanner(nil) panicked with %v, want %v", err, want)
		}
	}()
	lanes.MustPlanner[int64](nil)
	t.Fatal("MustPlanner(nil) returned")
}
