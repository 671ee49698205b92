package coordination

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/spate-go/coordination/internal/naming"
)

// MaxInFlightLimit is the largest Config.MaxInFlight. A worker's
// assignment record names every split it is given, so its size grows with
// the budget; the leader also clamps each member's budget to what that
// record can carry under the store's value cap (docs/protocol.md, "Size
// limits"): with NATS's 512 KiB cap, all 65536 fit with split ids of up to
// 4 bytes, 40325 with ids of 10 bytes, 4001 with ids of 128. The bound is
// high enough for 100,000 splits over 8 workers (12,500 each).
const MaxInFlightLimit = 1 << 16

// DefaultMinCutWeight is [DefaultConfig]'s Config.MinCutWeight: a cut
// hands an idle lane at least this much work, in the splits' weight units.
const DefaultMinCutWeight = 1000

// InstanceIDMaxLen is the longest a Config.InstanceID may be, in bytes.
const InstanceIDMaxLen = 128

// Config configures one worker. Start from [DefaultConfig]: numeric fields are
// never defaulted from their zero value. Only InstanceID, RebalanceDelay,
// StartupGrace, CutInterval, Clock, Logger and Metrics accept their zero
// value.
type Config struct {
	// InstanceID names the worker: 1..128 bytes of [A-Za-z0-9_-], unique among
	// live workers of the job (a second live worker started with an id in use
	// fails). Reusing it across restarts is encouraged (fast reclaim: a
	// restart takes its crashed predecessor's splits back at most
	// LeaseDuration/2 after it starts). Default "": actors.Spawn generates
	// "spate-" + 32 random hex characters.
	InstanceID string
	// LeaseDuration is the lease and presence TTL, and so the takeover latency
	// after a crash; the leader also places elsewhere the splits a worker
	// leaves unclaimed this long while it has a free lane. It must equal the
	// store's LeaseTTL. Default 30s; at least 300ms and at least 2 x
	// OpTimeout.
	LeaseDuration time.Duration
	// OpTimeout bounds one store operation in real time. Default 10s; at
	// least 50ms.
	OpTimeout time.Duration
	// MaxAttempts is the number of delivery attempts before a split is
	// quarantined. Default 4; at least 1.
	MaxAttempts uint32
	// MaxInFlight is the most splits this worker holds at once, draining ones
	// included; it is advertised to the leader, which may give it fewer (see
	// MaxInFlightLimit). Default 8; 1..MaxInFlightLimit.
	MaxInFlight int
	// ReplanInterval is the leader's replan cadence while the plan is open.
	// Default 60s; at least LeaseDuration.
	ReplanInterval time.Duration
	// ReconcileInterval is the cadence of the listing backstop for missed
	// watch events. Default 30s; at least 2 x OpTimeout (so 0 is rejected).
	ReconcileInterval time.Duration
	// StartupMaxAttempts is the attempt budget of each startup phase.
	// Default 8; at least 1.
	StartupMaxAttempts int
	// RebalanceDelay is how long a crashed worker's splits are withheld
	// before they are reassigned. Default 20s; 0 reassigns at once; negative
	// is rejected.
	RebalanceDelay time.Duration
	// StartupGrace is the leader's grace window against churn (like Kafka's
	// group.initial.rebalance.delay.ms): no assignment moves a split away
	// from its owner within StartupGrace of the leader starting to lead (so
	// workers that start together all join before anything moves), of the
	// owner joining, or of the owner claiming the split (so a split does not
	// bounce). A leader of a fleet that is starting (no live member holds a
	// split: a new job, or every worker restarted) also places no split that
	// no live member owns while members are still joining (until
	// StartupGrace/6 passes with no new member, at most StartupGrace after
	// it started leading), so workers that start together are placed once,
	// balanced; in a running fleet unowned splits are assigned at once.
	// Default 3s; 0 disables it; negative is rejected.
	StartupGrace time.Duration
	// DrainDeadline is the deadline of a live revocation and the silence
	// timeout of a cancelled one. Default 10s; at least OpTimeout; it may
	// exceed LeaseDuration.
	DrainDeadline time.Duration
	// MinCutWeight is the smallest residual the leader asks a running
	// split's owner to cut off, in the splits' weight units
	// (docs/protocol.md, "Runtime split"): a cut is worth it only when what
	// it hands to an idle lane outweighs its cost, about six store writes
	// (the cut commit, the residual's spec and split record, its claim,
	// fence and completion) and a placement, some tens of milliseconds. Set
	// it to the weight of what one lane handles in about half a second: with
	// weights in records at a few thousand records a second per lane, the
	// default; with weights in bytes, some megabytes; with coarse units (one
	// per file or table), their count in that time, 1 at least. It matters
	// only for sources that implement driver.Splitter. Default 1000 (was 1:
	// a cut could hand a lane a single record); at least 1.
	MinCutWeight uint64
	// CutInterval bounds the rate of runtime splits: the leader asks to cut
	// a split at most once per CutInterval (and never for more residuals
	// than lanes idle), evaluates at most every CutInterval/4 between
	// heartbeats, and an unanswered request expires after it. 0 means one
	// heartbeat (LeaseDuration/3); negative never cuts. Default 0.
	CutInterval time.Duration
	// Clock governs every protocol timer. nil means the real clock. A mock
	// clock is supported only with memstore sharing the same clock.
	Clock clock.Clock
	// Logger receives the coordinator's logs, each record with the
	// worker's "instance". nil means slog.Default(), so warnings are seen
	// unless asked otherwise; slog.New(slog.DiscardHandler) discards them.
	// driver.Run and driver.New log to the same logger by default.
	Logger *slog.Logger
	// Metrics registers the coordination_* metric families. nil records no
	// metrics.
	Metrics prometheus.Registerer
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		LeaseDuration:      30 * time.Second,
		OpTimeout:          10 * time.Second,
		MaxAttempts:        4,
		MaxInFlight:        8,
		ReplanInterval:     60 * time.Second,
		ReconcileInterval:  30 * time.Second,
		StartupMaxAttempts: 8,
		RebalanceDelay:     20 * time.Second,
		StartupGrace:       3 * time.Second,
		DrainDeadline:      10 * time.Second,
		MinCutWeight:       DefaultMinCutWeight,
	}
}

// Validate checks the configuration and returns the first violated rule as
// *Error of kind Fatal naming the field, the rule and the value. It never
// mutates c.
func (c Config) Validate() error {
	for _, rule := range []func(Config) string{
		func(c Config) string { // V1
			return atLeast("OpTimeout", c.OpTimeout, 50*time.Millisecond)
		},
		func(c Config) string { // V2
			return atLeast("LeaseDuration", c.LeaseDuration, 300*time.Millisecond)
		},
		func(c Config) string { // V3
			if c.OpTimeout > c.LeaseDuration/2 { // LeaseDuration < 2 x OpTimeout, without overflow
				return fmt.Sprintf("LeaseDuration (%s) must be >= 2 x OpTimeout (%s) so that one slow store write cannot outlast the lease it is renewing", c.LeaseDuration, c.OpTimeout)
			}
			return ""
		},
		func(c Config) string { // V4
			if c.MaxAttempts < 1 {
				return fmt.Sprintf("MaxAttempts must be >= 1, got %d", c.MaxAttempts)
			}
			return ""
		},
		func(c Config) string { // V5
			if c.MaxInFlight < 1 || c.MaxInFlight > MaxInFlightLimit {
				return fmt.Sprintf("MaxInFlight must be 1..%d, got %d; a worker's assignment record names every split it holds and must fit the store's value cap", MaxInFlightLimit, c.MaxInFlight)
			}
			return ""
		},
		func(c Config) string { // V6
			if c.ReplanInterval < c.LeaseDuration {
				return fmt.Sprintf("ReplanInterval (%s) must be >= LeaseDuration (%s); a shorter replan cadence only adds load", c.ReplanInterval, c.LeaseDuration)
			}
			return ""
		},
		func(c Config) string { // V7
			if c.OpTimeout > c.ReconcileInterval/2 { // ReconcileInterval < 2 x OpTimeout, without overflow
				return fmt.Sprintf("ReconcileInterval (%s) must be >= 2 x OpTimeout (%s): a listing must be able to finish before the next one starts", c.ReconcileInterval, c.OpTimeout)
			}
			return ""
		},
		func(c Config) string { // V8
			if c.InstanceID == "" {
				return ""
			}
			return naming.CheckLength("InstanceID", c.InstanceID, InstanceIDMaxLen)
		},
		func(c Config) string { // V9
			if reason := naming.CheckBytes("InstanceID", c.InstanceID); reason != "" {
				return reason + " (replace dots in pod names, for example with '-')"
			}
			return ""
		},
		func(c Config) string { // V10
			if c.StartupMaxAttempts < 1 {
				return fmt.Sprintf("StartupMaxAttempts must be >= 1, got %d", c.StartupMaxAttempts)
			}
			return ""
		},
		func(c Config) string { // V11
			if c.DrainDeadline < c.OpTimeout {
				return fmt.Sprintf("DrainDeadline (%s) must be >= OpTimeout (%s); otherwise no drain could commit its tail before being forced", c.DrainDeadline, c.OpTimeout)
			}
			return ""
		},
		func(c Config) string { // V12
			if c.RebalanceDelay < 0 {
				return fmt.Sprintf("RebalanceDelay must be >= 0 (0 reassigns at once), got %s", c.RebalanceDelay)
			}
			return ""
		},
		func(c Config) string { // V13
			if c.StartupGrace < 0 {
				return fmt.Sprintf("StartupGrace must be >= 0 (0 disables the grace window), got %s", c.StartupGrace)
			}
			return ""
		},
		func(c Config) string { // V14
			if c.MinCutWeight < 1 {
				return "MinCutWeight must be >= 1 (the smallest residual a runtime split may cut off, in weight units), got 0"
			}
			return ""
		},
	} {
		if reason := rule(c); reason != "" {
			return &Error{Kind: Fatal, Reason: reason}
		}
	}
	return nil
}

// EffectiveCutInterval returns the cadence of runtime splits CutInterval
// stands for: one heartbeat (LeaseDuration/3) when it is 0, and 0 (never
// cut) when it is negative.
func (c Config) EffectiveCutInterval() time.Duration {
	switch {
	case c.CutInterval < 0:
		return 0
	case c.CutInterval == 0:
		return c.LeaseDuration / 3
	}
	return c.CutInterval
}

func atLeast(field string, got, min time.Duration) string {
	if got < min {
		return fmt.Sprintf("%s must be >= %s, got %s", field, min, got)
	}
	return ""
}
