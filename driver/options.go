package driver

import "log/slog"

// Option configures a [Driver] built by [New].
type Option func(*options)

// options collects what the Options set.
type options struct {
	drainOnStall bool
	stop         <-chan struct{}
	logger       *slog.Logger
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

// WithLogger sets the logger for the driver's warnings. nil (the default)
// discards them.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}
