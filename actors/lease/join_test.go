package lease

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// TestJoinReturnsThePlannedCount checks that joining a job reads the plan
// record's planned count (the size hint the first SessionChanged carries) and that a worker
// creating the plan record reports 0.
func TestJoinReturnsThePlannedCount(t *testing.T) {
	e, clk := workertest.NewEngine(t)
	ctx := context.Background()
	mem := memstore.New(1500*time.Millisecond, memstore.WithClock(clk))
	v := workertest.ActorEnv(e, mem, workertest.Config(t, clk, "w1"), "n1", prometheus.NewPedanticRegistry())

	planned, err := join(ctx, v, "fp")
	if err != nil || planned != 0 {
		t.Fatalf("join creating the plan record = %d, %v; want 0, nil", planned, err)
	}
	e1, _, err := mem.Get(ctx, store.Durable, protocol.KeyPlan)
	if err != nil {
		t.Fatal(err)
	}
	plan := protocol.NewPlan("fp", 0)
	plan.Planned = 12345
	if _, ok, err := mem.Update(ctx, store.Durable, protocol.KeyPlan, protocol.EncodePlan(plan), e1.Revision); err != nil || !ok {
		t.Fatalf("update the plan record: %v %v", ok, err)
	}
	if planned, err = join(ctx, v, "fp"); err != nil || planned != 12345 {
		t.Fatalf("join of a planned job = %d, %v; want 12345, nil", planned, err)
	}
}
