package protocol

import (
	"bytes"
	"math"
	"slices"

	"github.com/spate-go/coordination"
)

// This file holds the record transitions of docs/protocol.md ("Writes"):
// pure functions from the record a writer observed to the record it CASes.
// Callers never apply them to terminal records. Counters saturate instead of
// wrapping, so an epoch or attempt count never decreases.

// NewPlan returns the plan record the first joiner creates: generation 0,
// open, planned 0, cursor null.
func NewPlan(fingerprint string, nowMs int64) PlanRecord {
	return PlanRecord{Fingerprint: fingerprint, Finality: coordination.PlanOpen, UpdatedAtMs: nowMs}
}

// SeedSplit returns the seeded split record of split id: its weight (0 is
// stored as 1), epoch 0, owner null, attempts 0, runnable, or completed
// when the seed is (docs/protocol.md, "Seeding").
func SeedSplit(id coordination.SplitID, fp, weight uint64, seed *coordination.SplitProgress, nowMs int64) SplitRecord {
	r := SplitRecord{ID: id, FP: fp, Weight: max(weight, 1), Status: StatusRunnable, WrittenAtMs: nowMs}
	if seed != nil && seed.Completed {
		r.Status = StatusCompleted
	}
	return r
}

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

// Claim returns the split record of a claim by owner's session nonce at
// epoch (the view's NextEpoch), charging one attempt iff chargeAttempt.
// Status is unchanged.
func (r SplitRecord) Claim(owner, nonce string, epoch uint64, chargeAttempt bool, nowMs int64) SplitRecord {
	r.Epoch = epoch
	r.Owner, r.Nonce = owner, nonce
	if chargeAttempt {
		r.Attempts = incAttempts(r.Attempts)
	}
	r.WrittenAtMs = nowMs
	return r
}

// HandBack returns the split record of a hand-back: owner and nonce null,
// everything else unchanged.
func (r SplitRecord) HandBack(nowMs int64) SplitRecord {
	r.Owner, r.Nonce = "", ""
	r.WrittenAtMs = nowMs
	return r
}

// Complete returns the split record of a completion: status completed; the
// owner stays (a completed record keeps its last owner).
func (r SplitRecord) Complete(nowMs int64) SplitRecord {
	r.Status = StatusCompleted
	r.WrittenAtMs = nowMs
	return r
}

// Fail returns the split record of a Fail: attempts + 1, owner null; when
// attempts + 1 >= maxAttempts also status quarantined and epoch + 1.
func (r SplitRecord) Fail(maxAttempts uint32, nowMs int64) SplitRecord {
	r.Attempts = incAttempts(r.Attempts)
	r.Owner, r.Nonce = "", ""
	if r.Attempts >= maxAttempts {
		r.Status = StatusQuarantined
		r.Epoch = incEpoch(r.Epoch)
	}
	r.WrittenAtMs = nowMs
	return r
}

// NextEpoch is the epoch of the next tenancy: Epoch + 1, saturating. A
// decoded record never carries the top epoch (its decoder rejects it), so
// the result is always above Epoch; at the top it stays there and the
// record it is written to fails to decode everywhere, never wrapping to 0.
func (r SplitRecord) NextEpoch() uint64 { return incEpoch(r.Epoch) }

// QuarantineOnTakeover returns the split record of a quarantine on
// takeover: epoch + 1, status quarantined, owner null, attempts + 1.
func (r SplitRecord) QuarantineOnTakeover(nowMs int64) SplitRecord {
	r.Epoch = incEpoch(r.Epoch)
	r.Status = StatusQuarantined
	r.Owner, r.Nonce = "", ""
	r.Attempts = incAttempts(r.Attempts)
	r.WrittenAtMs = nowMs
	return r
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
// state and completed flag: a lost commit CAS whose fresh record passes this
// against the intended write landed after all.
func (r ProgressRecord) SameProgress(o ProgressRecord) bool {
	sameWatermark := (r.Watermark == nil) == (o.Watermark == nil) &&
		(r.Watermark == nil || *r.Watermark == *o.Watermark)
	return r.Owner == o.Owner && r.Epoch == o.Epoch && sameWatermark &&
		(r.State == nil) == (o.State == nil) && bytes.Equal(r.State, o.State) &&
		r.Completed == o.Completed
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

// nonNilCopy copies b; nil and empty become an empty, non-nil slice.
func nonNilCopy(b []byte) []byte {
	return append([]byte{}, b...)
}

func incAttempts(a uint32) uint32 {
	if a == math.MaxUint32 {
		return a
	}
	return a + 1
}

func incEpoch(e uint64) uint64 {
	if e == math.MaxUint64 {
		return e
	}
	return e + 1
}
