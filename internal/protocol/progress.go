package protocol

import (
	"bytes"
	"slices"

	"github.com/spate-go/coordination"
)

// The progress record's transitions of docs/protocol.md ("Writes"): pure
// functions from the record a writer observed to the record it CASes (a seed,
// a claimant's fence, a commit). A completed progress record is never written
// again. The split record's are in split_record.go.

// SeedProgress returns the seeded progress record of split id: epoch 0,
// owner null, the seed's watermark, state ("" if empty) and completed flag.
func SeedProgress(id coordination.SplitID, fp uint64, seed coordination.SplitProgress, nowMs int64) ProgressRecord {
	return ProgressRecord{ID: id, FP: fp, WrittenAtMs: nowMs}.Commit(seed, nowMs)
}

// FreshProgress returns the progress record a claimant creates when the
// split has none yet: fenced at epoch by owner, watermark and state null.
func FreshProgress(id coordination.SplitID, fp uint64, owner string, epoch uint64, nowMs int64) ProgressRecord {
	return ProgressRecord{ID: id, FP: fp, Epoch: epoch, Owner: owner, WrittenAtMs: nowMs}
}

// Fence returns the progress record that fences it for the tenancy of owner
// at epoch: a commit of any earlier tenancy then loses its CAS. Progress
// fields are unchanged.
func (r ProgressRecord) Fence(owner string, epoch uint64, nowMs int64) ProgressRecord {
	r.Epoch, r.Owner = epoch, owner
	r.WrittenAtMs = nowMs
	return r
}

// Commit returns the progress record of a commit of p: watermark, state
// (never null; "" if empty) and completed flag from p; epoch and owner
// unchanged. State is copied.
func (r ProgressRecord) Commit(p coordination.SplitProgress, nowMs int64) ProgressRecord {
	w := p.Watermark
	r.Watermark = &w
	r.State = nonNilCopy(p.State)
	r.Completed = p.Completed
	r.WrittenAtMs = nowMs
	return r
}

// Progress returns the record's committed or seeded progress, or nil when the
// watermark is null. An empty state is returned as nil; the state is copied.
func (r ProgressRecord) Progress() *coordination.SplitProgress {
	if r.Watermark == nil {
		return nil
	}
	p := &coordination.SplitProgress{Watermark: *r.Watermark, Completed: r.Completed}
	if len(r.State) > 0 {
		p.State = slices.Clone(r.State)
	}
	return p
}

// SameProgress reports whether r and o agree on owner, epoch, watermark,
// state, completed flag, descriptor and cut: a lost commit CAS whose fresh
// record passes this against the intended write landed after all (a cut
// commit only with its cut: docs/protocol.md, "Runtime split").
func (r ProgressRecord) SameProgress(o ProgressRecord) bool {
	sameWatermark := (r.Watermark == nil) == (o.Watermark == nil) &&
		(r.Watermark == nil || *r.Watermark == *o.Watermark)
	return r.Owner == o.Owner && r.Epoch == o.Epoch && sameWatermark &&
		(r.State == nil) == (o.State == nil) && bytes.Equal(r.State, o.State) &&
		r.Completed == o.Completed && sameCut(r, o)
}

// nonNilCopy copies b; nil and empty become an empty, non-nil slice.
func nonNilCopy(b []byte) []byte {
	return append([]byte{}, b...)
}
