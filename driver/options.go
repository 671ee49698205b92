package driver

import (
	"log/slog"
	"time"

	"github.com/spate-go/coordination"
)

// Option configures a [Driver] built by [New].
type Option func(*options)

// options collects what the Options set.
type options struct {
	drainOnStall bool
	stop         <-chan struct{}
	logger       *slog.Logger

	planner        coordination.Planner // Run only
	commitInterval time.Duration        // Run only; 0 means the default
	pauseAfter     time.Duration        // Run only; 0 means one commit interval
}

// WithDrainOnStall makes a Stalled verdict end the run as [Drained] (with one
// warning) instead of the Fatal "job stalled" error PollEvents returns by
// default.
func WithDrainOnStall() Option {
	return func(o *options) { o.drainOnStall = true }
}

// WithStop hands the run's stop channel to the coordinator (through
// Coordinator.SetStop, before Start). Once it is closed, coordinator calls
// waiting on the store return Retryable promptly, which the driver treats as
// deferred, so the control loop is never wedged during a stop.
func WithStop(stop <-chan struct{}) Option {
	return func(o *options) { o.stop = stop }
}

// WithLogger sets the logger of the driver's records; the driver adds the
// coordinator's "instance" to each when the coordinator has an InstanceID
// method (as *actors.Coordinator does), so pass a logger without one. By
// default (and with nil) the driver logs to the coordinator's own logger
// when it has a Logger method (*actors.Coordinator: its Config.Logger, or
// slog.Default()), else to slog.Default(). Discard with
// WithLogger(slog.New(slog.DiscardHandler)).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// DefaultCommitInterval is [Run]'s commit cadence without
// [WithCommitInterval].
const DefaultCommitInterval = time.Second

// WithPlanner sets the planner [Run] starts the coordinator with; Run
// requires it. Every worker of a job must pass a planner with the same
// fingerprint; only the elected leader runs it. [New] ignores it.
func WithPlanner(p coordination.Planner) Option {
	return func(o *options) { o.planner = p }
}

// WithCommitInterval sets how often [Run] commits the lanes' acknowledged
// watermarks: default (and 0) [DefaultCommitInterval]; negative makes Run
// return Fatal. A lane
// that reaches end of input is committed at once. After a crash a split
// replays at most what was acknowledged in one interval; a shorter interval
// means more store writes (one per advanced lane per interval). [New]
// ignores it.
func WithCommitInterval(d time.Duration) Option {
	return func(o *options) { o.commitInterval = d }
}

// WithPauseAfter sets how long a lane of [Run] may keep reading after its
// first commit that did not land (an error or a timeout, not Fenced) before
// Run pauses its intake through the source's [Pauser]; the lane resumes as
// soon as one of its commits lands. Default (and 0): one commit interval;
// negative makes Run return Fatal. During a store outage a lane then reads
// at most this window plus one commit interval plus one OpTimeout of
// records that cannot be committed, which is the most a forced move of the
// split replays. [New] ignores it.
func WithPauseAfter(d time.Duration) Option {
	return func(o *options) { o.pauseAfter = d }
}
