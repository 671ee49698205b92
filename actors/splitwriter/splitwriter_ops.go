package splitwriter

import (
	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
)

// The writes the split-writer actor queues per split, one request type and one
// result type each. Writes on the same split run one at a time, in arrival
// order; each result comes back to the actor through its inbox, from the
// write's goroutine (or at once, for a write refused without I/O).

// splitOp is one queued write on one split.
type splitOp interface {
	// target names the split the write is on.
	target() coordination.SplitID
}

// failOp is Fail's write: surrender the tenancy and charge an attempt
// (docs/protocol.md, "Hand-back, fail, quarantine").
type failOp struct {
	split   coordination.SplitID
	epoch   uint64
	reason  string     // the caller's reason, logged
	replyTo *actor.PID // answered with FailSplitReply; nil: nobody waits
}

// handBackOp clears the owner of a surrendered tenancy (Release,
// ReleaseDrained, a forced revocation, Depart), as one write of a batch
// answered when its last write resolves.
type handBackOp struct {
	split  coordination.SplitID
	epoch  uint64
	batch  uint64
	reason wire.EndReason
}

// completeOp completes the split record of a tenancy whose completed
// commit landed.
type completeOp struct {
	split coordination.SplitID
	epoch uint64
}

// claimOp runs the claim protocol for a candidate (claim.go).
type claimOp struct{ claim claimRequest }

// claimRequest is a claim, or a quarantine on takeover, the claimer asks
// for (docs/protocol.md, "Claim protocol"): Record and RecordRev are the
// view's split record it was judged on.
type claimRequest struct {
	Candidate protocol.Candidate
	Record    protocol.SplitRecord
	RecordRev uint64
	Nonce     string // this worker's session, which the claim writes
	FP        uint64 // H(the job's fingerprint), which the records carry
	// Complete retries the completion alone: Record is this worker's
	// claim, whose fence found the progress record completed and whose
	// completion of the split record erred (claimer.stranded).
	Complete bool
}

// leftoverOp returns a leftover of this session the claimer found.
type leftoverOp struct{ leftover leftoverReturn }

// leftoverReturn is the hand-back of a split record that names this
// session although the worker neither holds nor is assigned the split (a
// write of its own landed unseen).
type leftoverReturn struct {
	Split     coordination.SplitID
	Record    protocol.SplitRecord
	RecordRev uint64
}

// departLeftoverOp returns a leftover of this worker on Depart, in the
// departure's hand-back batch (actors/depart.go, departReturn); epoch is
// the record's and complete whether the return is a completion, both set
// when the write starts.
type departLeftoverOp struct {
	split    coordination.SplitID
	epoch    uint64
	complete bool
	batch    uint64
	// unseen marks a split with a claim of this worker in flight or erred
	// when Depart began: its record may name this session although the
	// view does not show it, so it is read when the view shows no leftover
	// (returnUnseenClaim).
	unseen bool
}

func (o failOp) target() coordination.SplitID           { return o.split }
func (o handBackOp) target() coordination.SplitID       { return o.split }
func (o completeOp) target() coordination.SplitID       { return o.split }
func (o claimOp) target() coordination.SplitID          { return o.claim.Candidate.ID }
func (o leftoverOp) target() coordination.SplitID       { return o.leftover.Split }
func (o departLeftoverOp) target() coordination.SplitID { return o.split }

// splitWritten is the result of a split record write (casSplit,
// endTenancy).
type splitWritten = worker.CASResult[protocol.SplitRecord]

// The results, one per request type.
type (
	failDone struct {
		op  failOp
		res splitWritten
	}
	handBackDone struct {
		op  handBackOp
		res splitWritten
	}
	completeDone struct {
		op  completeOp
		res splitWritten
	}
	claimDone struct {
		op  claimOp
		res claimed
	}
	leftoverDone struct {
		op  leftoverOp
		res splitWritten
	}
	departLeftoverDone struct {
		op  departLeftoverOp
		res splitWritten
	}
)

// claimed is how a claim resolved (claimSplit).
type claimed struct {
	outcome worker.CASOutcome
	rec     protocol.SplitRecord // the split record as written or last known
	rev     uint64               // its revision; 0 if none
	kind    protocol.ClaimKind   // the kind that won
	spec    coordination.SplitSpec
	gen     uint64                  // the spec record's generation (a residual's spec copies it)
	quar    bool                    // the write quarantined the split
	prog    protocol.ProgressRecord // the progress fence
	progRev uint64
	retry   bool // gave up on a store error
	done    bool // the progress was found completed: the split record was completed instead (with retry: that write erred)
}
