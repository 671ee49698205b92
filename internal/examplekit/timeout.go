package examplekit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// ErrTimeout is the cause of a [WorkContext] that reached its deadline.
var ErrTimeout = errors.New("-timeout reached")

// ShutdownReserve is the part of a -timeout kept for stopping: a fifth of
// it, at most 15s. [WorkContext] ends the work that much before the
// deadline, so the workers depart, the servers stop and the report is
// written within the -timeout.
func ShutdownReserve(timeout time.Duration) time.Duration {
	return min(timeout/5, 15*time.Second)
}

// WorkContext returns the context of a run's work under -timeout: it ends
// [ShutdownReserve] before the timeout, with cause [ErrTimeout].
func WorkContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, timeout-ShutdownReserve(timeout), ErrTimeout)
}

// TimedOut reports whether ctx (from [WorkContext]) ended at its deadline,
// not by a signal.
func TimedOut(ctx context.Context) bool { return errors.Is(context.Cause(ctx), ErrTimeout) }

// Stage names what a run is doing, for the message of a run that overran
// its -timeout. The zero value says "starting"; a nil *Stage ignores Set.
// Safe for concurrent use.
type Stage struct{ what atomic.Pointer[string] }

// Set records that the run is now doing what ("stopping the embedded NATS
// server").
func (s *Stage) Set(what string) {
	if s != nil {
		s.what.Store(&what)
	}
}

// String returns what the run is doing.
func (s *Stage) String() string {
	if p := s.what.Load(); p != nil {
		return *p
	}
	return "starting"
}

// Bounded runs body and returns its exit status, unless body is still
// running timeout after the call: then it prints, as program name, what
// stage says the run was doing and returns ExitFailed without waiting for
// body, whose goroutine the caller's exit ends. So -timeout bounds the whole
// run, shutdown included, even when a shutdown hangs.
func Bounded(name string, timeout time.Duration, stage *Stage, stderr io.Writer, body func() int) int {
	done := make(chan int, 1) // body's status; buffered so a late body does not block
	go func() { done <- body() }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case code := <-done:
		return code
	case <-t.C:
		fmt.Fprintf(stderr, "%s: -timeout %s reached while %s; exiting without waiting for it\n", name, timeout, stage)
		return ExitFailed
	}
}
