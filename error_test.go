package coordination

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestErrorKindString(t *testing.T) {
	for k, want := range map[ErrorKind]string{Retryable: "retryable", Fenced: "fenced", Fatal: "fatal", 0: "unknown(0)", 9: "unknown(9)"} {
		if got := k.String(); got != want {
			t.Errorf("ErrorKind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}

func TestErrorText(t *testing.T) {
	e := &Error{Kind: Fenced, Reason: `split "s1": not held here; nothing was written`}
	if got, want := e.Error(), `coordination error (fenced): split "s1": not held here; nothing was written`; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}

func TestErrorIsMatchesOnlyItsKindSentinel(t *testing.T) {
	sentinels := map[ErrorKind]error{Retryable: ErrRetryable, Fenced: ErrFenced, Fatal: ErrFatal}
	for kind := range sentinels {
		err := fmt.Errorf("wrapped: %w", &Error{Kind: kind, Reason: "x"})
		for other, s := range sentinels {
			if got := errors.Is(err, s); got != (other == kind) {
				t.Errorf("errors.Is(%v error, %v sentinel) = %v", kind, other, got)
			}
		}
	}
	if errors.Is(ErrFatal, ErrRetryable) {
		t.Error("a sentinel must not match another kind's sentinel")
	}
}

func TestErrorUnwrapKeepsCause(t *testing.T) {
	err := Errorf(Retryable, "committing split s1: %w", context.DeadlineExceeded)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrRetryable) {
		t.Fatalf("cause or kind lost: %v", err)
	}
	if err.Reason != "committing split s1: context deadline exceeded" {
		t.Fatalf("reason = %q", err.Reason)
	}
}

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want ErrorKind
	}{
		{"nil", nil, 0},
		{"plain", errors.New("x"), 0},
		{"direct", &Error{Kind: Fatal}, Fatal},
		{"wrapped", fmt.Errorf("a: %w", &Error{Kind: Fenced}), Fenced},
		{"first in chain", &Error{Kind: Retryable, Err: &Error{Kind: Fatal}}, Retryable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := KindOf(tc.err); got != tc.want {
				t.Fatalf("KindOf = %v, want %v", got, tc.want)
			}
		})
	}
}
