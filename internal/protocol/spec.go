package protocol

import (
	"slices"

	"github.com/spate-go/coordination"
)

// NewSpec returns split s's spec record created by leadership generation: a
// weight of 0 is stored as 1 and an empty descriptor as "".
// The descriptor is copied.
func NewSpec(s coordination.SplitSpec, fp, generation uint64) SpecRecord {
	return SpecRecord{
		ID:         s.ID,
		FP:         fp,
		Generation: generation,
		Weight:     max(s.Weight, 1),
		Descriptor: nonNilCopy(s.Descriptor),
	}
}

// Spec returns the split spec the record describes: an empty descriptor is
// nil, the weight at least 1. The descriptor is copied.
func (s SpecRecord) Spec() coordination.SplitSpec {
	sp := coordination.SplitSpec{ID: s.ID, Weight: max(s.Weight, 1)}
	if len(s.Descriptor) > 0 {
		sp.Descriptor = slices.Clone(s.Descriptor)
	}
	return sp
}
