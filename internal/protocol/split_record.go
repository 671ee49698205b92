package protocol

import (
	"math"

	"github.com/spate-go/coordination"
)

// The split record's transitions of docs/protocol.md ("Writes"): pure
// functions from the record a writer observed to the record it CASes.
// Callers never apply them to terminal records. Counters saturate instead of
// wrapping, so an epoch or attempt count never decreases.

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
