package protocol

import "github.com/spate-go/coordination"

// ClaimKind is why a split may be claimed (SPEC §16.3). Kinds are declared in
// priority order: a lower kind is claimed first.
type ClaimKind int

const (
	// KindCreate is a split never owned: no lease, owner null, epoch 0.
	KindCreate ClaimKind = iota + 1
	// KindReleased is a split handed back gracefully: no lease, owner null,
	// epoch > 0.
	KindReleased
	// KindReclaim is a split whose live lease carries this instance id with
	// another nonce: a restarted predecessor's.
	KindReclaim
	// KindExpired is a split whose owner ended ungracefully: no lease, owner
	// set.
	KindExpired
)

// String returns "create", "released", "reclaim" or "expired" (the log attr
// "kind"), or "unknown".
func (k ClaimKind) String() string {
	switch k {
	case KindCreate:
		return "create"
	case KindReleased:
		return "released"
	case KindReclaim:
		return "reclaim"
	case KindExpired:
		return "expired"
	}
	return "unknown"
}

// ConsumesAttempt reports whether a claim of this kind charges a delivery
// attempt (SPEC §19.1): Reclaim and Expired do.
func (k ClaimKind) ConsumesAttempt() bool { return k == KindReclaim || k == KindExpired }

// AcquisitionReason returns the acquisitions_total reason label of a claim of
// this kind (SPEC §16.4): "create", "reassigned", "reclaimed" or "expired".
func (k ClaimKind) AcquisitionReason() string {
	switch k {
	case KindCreate:
		return "create"
	case KindReleased:
		return "reassigned"
	case KindReclaim:
		return "reclaimed"
	case KindExpired:
		return "expired"
	}
	return "unknown"
}

// CandidateInput is what [Classify] needs to know about one split.
type CandidateInput struct {
	// Record is the split's progress record in the view.
	Record ProgressRecord
	// HasSpec reports whether the split's spec is in the view.
	HasSpec bool
	// Lease is the split's live lease in the view, nil if none.
	Lease *LeaseRecord
	// Held reports whether this worker holds the split.
	Held bool
	// Me and MyNonce are this worker's instance id and nonce.
	Me, MyNonce string
	// MaxAttempts is Config.MaxAttempts.
	MaxAttempts uint32
}

// Candidate is one split that may be claimed or quarantined now.
type Candidate struct {
	// ID is the split.
	ID coordination.SplitID
	// Kind is the claim kind.
	Kind ClaimKind
	// Quarantine marks a quarantine candidate (SPEC §19.2): the kind consumes
	// an attempt and attempts + 1 >= MaxAttempts. It needs no spec and is
	// processed regardless of assignment and lane budget.
	Quarantine bool
	// OwnLease reports a live lease with owner == Me (an own leftover or a
	// Reclaim): the lease is written with Update at its revision, not Create.
	OwnLease bool
}

// Classify returns the candidate for one split per SPEC §16.3, or ok=false
// when it is not one: terminal, held here, under another owner's live lease,
// or a claim candidate whose spec is not in the view yet. A live lease under
// this instance id and nonce on a split not held is a leftover: the split is
// classified as if there were no lease, with OwnLease set.
func Classify(in CandidateInput) (Candidate, bool) {
	r := in.Record
	if r.Status != StatusRunnable || in.Held {
		return Candidate{}, false
	}
	c := Candidate{ID: r.ID}
	switch {
	case in.Lease != nil && in.Lease.Owner != in.Me:
		return Candidate{}, false
	case in.Lease != nil && in.Lease.Nonce != in.MyNonce:
		c.Kind, c.OwnLease = KindReclaim, true
	default:
		c.OwnLease = in.Lease != nil
		switch {
		case r.Owner != "":
			c.Kind = KindExpired
		case r.Epoch == 0:
			c.Kind = KindCreate
		default:
			c.Kind = KindReleased
		}
	}
	if c.Kind.ConsumesAttempt() && uint64(r.Attempts)+1 >= uint64(in.MaxAttempts) {
		c.Quarantine = true
		return c, true
	}
	if !in.HasSpec {
		return Candidate{}, false
	}
	return c, true
}

// CandidateLess orders candidates for claiming: by kind priority (Create,
// Released, Reclaim, Expired), then by id.
func CandidateLess(a, b Candidate) bool {
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	return a.ID < b.ID
}
