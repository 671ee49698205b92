package protocol

import "github.com/spate-go/coordination"

// ClaimKind is why a split may be claimed (docs/protocol.md, "Claim
// candidates"). Kinds are declared in priority order: a lower kind is
// claimed first.
type ClaimKind int

const (
	// KindCreate is a split never owned: owner null, epoch 0.
	KindCreate ClaimKind = iota + 1
	// KindReleased is a split handed back gracefully (owner null, epoch >
	// 0), or an own leftover: a record naming this very session that this
	// worker does not hold.
	KindReleased
	// KindReclaim is a split owned by an ended earlier session of this
	// instance id: a restarted predecessor's, or this worker's own lapsed
	// session.
	KindReclaim
	// KindExpired is a split whose owner's session ended: the owner's
	// presence is gone or carries another nonce.
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
// attempt: Reclaim and Expired do (the tenancy ended ungracefully).
func (k ClaimKind) ConsumesAttempt() bool { return k == KindReclaim || k == KindExpired }

// AcquisitionReason returns the acquisitions_total reason label of a claim of
// this kind: "create", "reassigned", "reclaimed" or "expired".
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
	// Record is the split's record in the view.
	Record SplitRecord
	// OwnerSession is the nonce of the live session of Record.Owner in the
	// view (its presence value), "" if the owner has no presence.
	OwnerSession string
	// Held reports whether this worker holds the split.
	Held bool
	// Me and MyNonce are this worker's instance id and session nonce.
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
	// Quarantine marks a quarantine candidate: the kind consumes an attempt
	// and attempts + 1 >= MaxAttempts. It is processed regardless of
	// assignment and lane budget.
	Quarantine bool
	// Confirm asks the claimant to read the owner's presence before
	// writing: the view says the owner's session ended, and a stale view
	// must never take a split from a live session (Reclaim and Expired).
	Confirm bool
	// Leftover marks a record naming this very session that this worker
	// does not hold: claimed again if assigned here, else handed back.
	Leftover bool
}

// Classify returns the candidate for one split (docs/protocol.md, "Claim
// candidates"), or ok=false when it is not one: terminal, held here, or
// owned by another live session.
func Classify(in CandidateInput) (Candidate, bool) {
	r := in.Record
	if r.Status != StatusRunnable || in.Held {
		return Candidate{}, false
	}
	c := Candidate{ID: r.ID}
	switch {
	case r.Owner == "" && r.Epoch == 0:
		c.Kind = KindCreate
	case r.Owner == "":
		c.Kind = KindReleased
	case r.Owner == in.Me && r.Nonce == in.MyNonce:
		c.Kind, c.Leftover = KindReleased, true
		return c, true
	case in.OwnerSession == r.Nonce:
		return Candidate{}, false // the owner's session is live (for owner = me: a live twin's)
	case r.Owner == in.Me:
		c.Kind, c.Confirm = KindReclaim, true
	default:
		c.Kind, c.Confirm = KindExpired, true
	}
	c.Quarantine = c.Kind.ConsumesAttempt() && uint64(r.Attempts)+1 >= uint64(in.MaxAttempts)
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
