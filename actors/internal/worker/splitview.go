package worker

import "github.com/spate-go/coordination/internal/protocol"

// SplitEntry is a split record and its revision.
type SplitEntry struct {
	Rec protocol.SplitRecord
	Rev uint64
}
