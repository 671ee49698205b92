package examplekit

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/store"
)

// Timing of every example worker. NATS expires keys on the server with
// one-second granularity, so the lease cannot go below 2s; 3s keeps crash
// recovery quick: a dead worker's splits are claimable 3s after its last
// renewal, and RebalanceDelay 0 reassigns them at once.
const (
	LeaseDuration     = 3 * time.Second
	OpTimeout         = time.Second
	ReplanInterval    = 3 * time.Second
	ReconcileInterval = 2 * time.Second
	DrainDeadline     = 2 * time.Second
	RebalanceDelay    = 0
)

// WorkerConfig returns the coordinator configuration of example worker name:
// the defaults with the timing above.
func WorkerConfig(name string, logger *slog.Logger) coordination.Config {
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = name
	cfg.LeaseDuration = LeaseDuration
	cfg.OpTimeout = OpTimeout
	cfg.ReplanInterval = ReplanInterval
	cfg.ReconcileInterval = ReconcileInterval
	cfg.DrainDeadline = DrainDeadline
	cfg.RebalanceDelay = RebalanceDelay
	cfg.Logger = logger
	return cfg
}

// Spawn starts a worker's coordinator over st on a hollywood engine of its
// own, as a separate process would have. The caller keeps st: it closes it
// after the worker's run, or when Spawn fails.
func Spawn(st store.Store, cfg coordination.Config) (*actors.Coordinator, error) {
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		return nil, fmt.Errorf("worker %s: hollywood engine: %w", cfg.InstanceID, err)
	}
	return actors.Spawn(engine, st, cfg)
}

// Count renders n things with the noun in the right number: "1 split",
// "2 splits", "3 deliveries".
func Count[N int | int64](n N, noun string) string {
	switch {
	case n == 1:
		return "1 " + noun
	case strings.HasSuffix(noun, "y"):
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Percent renders part of whole as a whole percentage ("100%" of nothing).
func Percent(part, whole int64) string {
	if whole == 0 {
		return "100%"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(part)/float64(whole))
}
