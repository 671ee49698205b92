package examplekit

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestBoundedGivesUpOnAStuckShutdown runs a body that never returns (a
// shutdown that hangs): Bounded must return ExitFailed at the timeout and
// say what the run was doing.
func TestBoundedGivesUpOnAStuckShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := make(chan struct{})
		var stage Stage
		var stderr bytes.Buffer
		start := time.Now()
		code := Bounded("backfill", 4*time.Second, &stage, &stderr, func() int {
			stage.Set("stopping the embedded NATS server")
			<-stuck
			return ExitOK
		})
		if code != ExitFailed || time.Since(start) != 4*time.Second {
			t.Fatalf("Bounded = %d after %s; want %d after exactly 4s", code, time.Since(start), ExitFailed)
		}
		if want := "backfill: -timeout 4s reached while stopping the embedded NATS server; exiting without waiting for it\n"; stderr.String() != want {
			t.Fatalf("stderr = %q, want %q", stderr.String(), want)
		}
		close(stuck) // let the body's goroutine end inside the bubble
	})
}

func TestBoundedReturnsTheBodysStatus(t *testing.T) {
	var stderr bytes.Buffer
	if code := Bounded("x", time.Hour, nil, &stderr, func() int { return ExitInterrupted }); code != ExitInterrupted || stderr.Len() != 0 {
		t.Fatalf("Bounded = %d, stderr %q; want %d and nothing printed", code, stderr.String(), ExitInterrupted)
	}
}

// TestWorkContextLeavesTheShutdownReserve checks that the work ends before
// the deadline by the reserve, with a cause that tells it from a signal.
func TestWorkContextLeavesTheShutdownReserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, interrupt := context.WithCancel(t.Context())
		defer interrupt()
		ctx, cancel := WorkContext(parent, 5*time.Minute)
		defer cancel()
		start := time.Now()
		<-ctx.Done()
		if got := time.Since(start); got != 5*time.Minute-15*time.Second {
			t.Fatalf("work ended after %s, want 4m45s (5m less the 15s reserve)", got)
		}
		if !TimedOut(ctx) {
			t.Fatalf("cause %v, want ErrTimeout", context.Cause(ctx))
		}
		ctx2, cancel2 := WorkContext(parent, time.Minute)
		defer cancel2()
		interrupt()
		if TimedOut(ctx2) || !strings.Contains(context.Cause(ctx2).Error(), "canceled") {
			t.Fatalf("an interrupted run reads as timed out: %v", context.Cause(ctx2))
		}
	})
	if got := ShutdownReserve(4 * time.Second); got != 800*time.Millisecond {
		t.Fatalf("ShutdownReserve(4s) = %s, want 800ms", got)
	}
}
