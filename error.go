package coordination

import (
	"errors"
	"fmt"
)

// ErrorKind classifies an [Error].
type ErrorKind int

const (
	// Retryable is a transient failure: the previously committed state stays
	// authoritative, and the operation may or may not have taken effect.
	Retryable ErrorKind = iota + 1
	// Fenced means a fenced write lost or the split is not held here: nothing
	// was written and the split is gone from this worker.
	Fenced
	// Fatal is misconfiguration, a store without the required semantics, a
	// corrupt or foreign record, a fingerprint mismatch, or a source bug. It
	// ends the coordinator.
	Fatal
)

// String returns "retryable", "fenced", "fatal", or "unknown(N)".
func (k ErrorKind) String() string {
	switch k {
	case Retryable:
		return "retryable"
	case Fenced:
		return "fenced"
	case Fatal:
		return "fatal"
	}
	return fmt.Sprintf("unknown(%d)", int(k))
}

// Error is the error every seam method returns (or wraps).
type Error struct {
	// Kind classifies the failure.
	Kind ErrorKind
	// Reason says what failed and how to fix it; it includes the cause's text.
	Reason string
	// Err is the optional cause, kept for errors.Is and errors.As.
	Err error
}

// Error returns "coordination error (<kind>): <reason>".
func (e *Error) Error() string {
	return "coordination error (" + e.Kind.String() + "): " + e.Reason
}

// Unwrap returns the cause, or nil.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's kind.
func (e *Error) Is(target error) bool {
	s, ok := target.(*sentinel)
	return ok && s.kind == e.Kind
}

// sentinel is the type of the three kind sentinels; it is distinct from
// *Error so that a sentinel never matches another sentinel's kind by accident.
type sentinel struct{ kind ErrorKind }

func (s *sentinel) Error() string { return "coordination error (" + s.kind.String() + ")" }

var (
	// ErrRetryable matches, through errors.Is, every *Error of kind Retryable.
	ErrRetryable error = &sentinel{Retryable}
	// ErrFenced matches, through errors.Is, every *Error of kind Fenced.
	ErrFenced error = &sentinel{Fenced}
	// ErrFatal matches, through errors.Is, every *Error of kind Fatal.
	ErrFatal error = &sentinel{Fatal}
)

// KindOf returns the kind of the first *Error in err's chain, or 0 for nil or
// an error that is not a coordination error.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

// Errorf returns an *Error of kind k whose reason is the formatted text. When
// an argument is an error wrapped with %w, it becomes the cause in Err.
func Errorf(k ErrorKind, format string, args ...any) *Error {
	wrapped := fmt.Errorf(format, args...)
	return &Error{Kind: k, Reason: wrapped.Error(), Err: errors.Unwrap(wrapped)}
}
