package driver

import (
	"fmt"

	"github.com/spate-go/coordination"
)

// StalledError is the error [Run] returns when the job stalled: every split
// is completed or quarantined and at least one is quarantined, so the job
// cannot complete without an operator. It unwraps to a *coordination.Error
// of kind Fatal, so errors.Is(err, coordination.ErrFatal) holds; match it
// with errors.AsType[*driver.StalledError].
type StalledError struct {
	// Completed is the number of completed splits.
	Completed uint64
	// Quarantined is the number of quarantined splits.
	Quarantined uint64
}

// Error describes the stall and what to do about it.
func (e *StalledError) Error() string { return e.fatal().Error() }

// Unwrap returns the Fatal *coordination.Error describing the stall.
func (e *StalledError) Unwrap() error { return e.fatal() }

func (e *StalledError) fatal() *coordination.Error {
	return &coordination.Error{Kind: coordination.Fatal, Reason: fmt.Sprintf("job stalled: %d %s completed, %d quarantined after exhausting their delivery attempts; see coordination_splits_quarantined, then requeue or drop the quarantined splits",
		e.Completed, plural(e.Completed, "split", "splits"), e.Quarantined)}
}

// plural returns one when n is 1, else many.
func plural(n uint64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
