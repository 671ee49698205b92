package actors

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// testPlanner is a Planner returning a fixed plan.
type testPlanner struct {
	fp    string
	plan  coordination.SplitPlan
	err   error
	panic any
}

func (p *testPlanner) Fingerprint() string { return p.fp }

func (p *testPlanner) Plan(ctx context.Context, pc coordination.PlanContext) (coordination.SplitPlan, error) {
	if p.panic != nil {
		panic(p.panic)
	}
	return p.plan, p.err
}

func finalPlan(ids ...string) *testPlanner {
	p := &testPlanner{fp: "job:v1", plan: coordination.SplitPlan{Finality: coordination.PlanFinal}}
	for _, id := range ids {
		p.plan.Splits = append(p.plan.Splits, coordination.PlannedSplit{Spec: coordination.SplitSpec{ID: coordination.SplitID(id), Weight: 1}})
	}
	return p
}

// testConfig is the fleet harness's configuration (§30.2).
func testConfig(tb testing.TB, clk clock.Clock, id string) coordination.Config {
	tb.Helper()
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = id
	cfg.LeaseDuration = 1500 * time.Millisecond
	cfg.OpTimeout = 200 * time.Millisecond
	cfg.ReplanInterval = cfg.LeaseDuration
	cfg.ReconcileInterval = 400 * time.Millisecond
	cfg.DrainDeadline = cfg.LeaseDuration / 2
	cfg.RebalanceDelay = 0
	cfg.Clock = clk
	cfg.Logger = slog.New(slog.NewTextHandler(tb.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	return cfg
}

// rig is one engine, one memstore and one mock clock inside a bubble.
type rig struct {
	tb  testing.TB
	e   *actor.Engine
	st  *memstore.Store
	clk *clock.Mock
}

func newRig(tb testing.TB) *rig {
	tb.Helper()
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		tb.Fatal(err)
	}
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return &rig{tb: tb, e: e, st: memstore.New(1500*time.Millisecond, memstore.WithClock(clk)), clk: clk}
}

// advance moves the mock clock by d in steps of at most lease/12, letting
// every goroutine of the bubble settle between steps.
func (r *rig) advance(d time.Duration) {
	step := 125 * time.Millisecond
	for d > 0 {
		s := min(step, d)
		r.clk.Add(s)
		settle()
		// Yield bubble (real) time so that real-time backoffs and I/O
		// bounds make progress between clock steps.
		time.Sleep(20 * time.Millisecond)
		settle()
		d -= s
	}
}

// settle waits until every goroutine of the bubble is durably blocked.
func settle() { synctest.Wait() }

// collect polls c, appending events to *evs, and fails on an error.
func collect(tb testing.TB, c *Coordinator, evs *[]coordination.Event) {
	tb.Helper()
	got, err := c.Poll()
	if err != nil {
		tb.Fatalf("Poll: %v", err)
	}
	*evs = append(*evs, got...)
}

type (
	storeKeyspace = store.Keyspace
	storeEntry    = store.Entry
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
