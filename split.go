package coordination

import "github.com/spate-go/coordination/internal/naming"

// SplitIDMaxLen is the longest a [SplitID] may be, in bytes.
const SplitIDMaxLen = 128

// SplitID names one split of a job: 1 to [SplitIDMaxLen] bytes of [A-Za-z0-9_-].
// The byte '.' is reserved as the store's key separator. Build one with
// [NewSplitID]; the library re-validates every id a planner returns.
type SplitID string

// NewSplitID validates s as a split id. A violation returns *Error of kind
// [Fatal] whose reason names the length or the first bad byte and its position.
func NewSplitID(s string) (SplitID, error) {
	if reason := naming.Check("split id", s, SplitIDMaxLen); reason != "" {
		return "", &Error{Kind: Fatal, Reason: reason}
	}
	return SplitID(s), nil
}

// LeaseEpoch is the fencing token of one tenancy of one split. Epochs of a split
// strictly increase across its whole history; 0 means never owned.
type LeaseEpoch uint64

// SplitSpec is the immutable description of one split.
type SplitSpec struct {
	// ID names the split.
	ID SplitID
	// Descriptor is opaque to the library and carried verbatim to every owner.
	// An empty descriptor is returned as nil.
	Descriptor []byte
	// Weight is the split's load for balancing; 0 is treated as 1.
	Weight uint64
}

// SplitProgress is a split's committed progress.
type SplitProgress struct {
	// Watermark is one past the last acknowledged record, in the source's own
	// encoding. It never decreases.
	Watermark int64
	// State is opaque resume state; an empty state is returned as nil.
	State []byte
	// Completed is terminal: the split is fully delivered and committed.
	Completed bool
}

// Commit is one entry of [Coordinator.CommitFinal].
type Commit struct {
	// Split names a held split.
	Split SplitID
	// Progress is the progress to commit for it.
	Progress SplitProgress
}
