package actors

import "github.com/spate-go/coordination/internal/protocol"

// recEntry is a split record and its revision.
type recEntry struct {
	rec protocol.SplitRecord
	rev uint64
}
