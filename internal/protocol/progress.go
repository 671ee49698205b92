package protocol

import (
	"bytes"
	"math"
	"slices"

	"github.com/spate-go/coordination"
)

// This file holds the record transitions of SPEC §9.5: pure functions from
// the record a writer observed to the record it CASes. Callers never apply
// them to terminal records. Counters saturate instead of wrapping, so an
// epoch or attempt count never decreases.

// NewPlan returns the plan record the first joiner creates: generation 0,
// open, planned 0, cursor null (SPEC §9.3).
func NewPlan(fingerprint string, nowMs int64) PlanRecord {
	return PlanRecord{Fingerprint: fingerprint, Finality: coordination.PlanOpen, UpdatedAtMs: nowMs}
}

// SeedProgress returns the seeded progress record of split id (SPEC §9.5):
// epoch 0, owner null, attempts 0; without a seed runnable with watermark and
// state null; with one its watermark, state ("" if empty) and completed flag,
// status completed iff the seed is completed.
func SeedProgress(id coordination.SplitID, fp uint64, seed *coordination.SplitProgress, nowMs int64) ProgressRecord {
	r := ProgressRecord{ID: id, FP: fp, Status: StatusRunnable, WrittenAtMs: nowMs}
	if seed != nil {
		r = r.withProgress(*seed)
	}
	return r
}

// NewSpec returns split s's spec record created by leadership generation
// (SPEC §9.4): a weight of 0 is stored as 1 and an empty descriptor as "".
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

// Claim returns the record of a claim by owner at epoch (SPEC §16.4: the
// view's epoch + 1), charging one attempt iff chargeAttempt. Status and
// progress fields are unchanged.
func (r ProgressRecord) Claim(owner string, epoch uint64, chargeAttempt bool, nowMs int64) ProgressRecord {
	r.Epoch = epoch
	r.Owner = owner
	if chargeAttempt {
		r.Attempts = incAttempts(r.Attempts)
	}
	r.WrittenAtMs = nowMs
	return r
}

// Commit returns the record of a commit of p (SPEC §18.1): watermark, state
// (never null; "" if empty) and completed flag from p, status completed iff
// p is completed; epoch, owner and attempts unchanged. State is copied.
func (r ProgressRecord) Commit(p coordination.SplitProgress, nowMs int64) ProgressRecord {
	r = r.withProgress(p)
	r.WrittenAtMs = nowMs
	return r
}

// withProgress sets the progress fields from p.
func (r ProgressRecord) withProgress(p coordination.SplitProgress) ProgressRecord {
	w := p.Watermark
	r.Watermark = &w
	r.State = nonNilCopy(p.State)
	r.Completed = p.Completed
	if p.Completed {
		r.Status = StatusCompleted
	}
	return r
}

// HandBack returns the record of a hand-back (SPEC §18.4): owner null,
// everything else unchanged.
func (r ProgressRecord) HandBack(nowMs int64) ProgressRecord {
	r.Owner = ""
	r.WrittenAtMs = nowMs
	return r
}

// Fail returns the record of a Fail (SPEC §18.5): attempts + 1, owner null;
// when attempts + 1 >= maxAttempts also status quarantined and epoch + 1.
func (r ProgressRecord) Fail(maxAttempts uint32, nowMs int64) ProgressRecord {
	r.Attempts = incAttempts(r.Attempts)
	r.Owner = ""
	if r.Attempts >= maxAttempts {
		r.Status = StatusQuarantined
		r.Epoch = incEpoch(r.Epoch)
	}
	r.WrittenAtMs = nowMs
	return r
}

// QuarantineOnTakeover returns the record of a quarantine on takeover
// (SPEC §19.2): epoch + 1, status quarantined, owner null, attempts + 1.
func (r ProgressRecord) QuarantineOnTakeover(nowMs int64) ProgressRecord {
	r.Epoch = incEpoch(r.Epoch)
	r.Status = StatusQuarantined
	r.Owner = ""
	r.Attempts = incAttempts(r.Attempts)
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
// against the intended write landed after all (SPEC §18.1 (a)).
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
