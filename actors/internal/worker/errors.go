package worker

import (
	"errors"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// The errors the actors and the handle return or latch, each built in one
// place. Every one is a *coordination.Error whose Reason names the subject
// and, where the caller can act, the fix.

// Sentinels of the handle's misuse and of a halted worker.
var (
	ErrAborted     = &coordination.Error{Kind: coordination.Fatal, Reason: "coordinator aborted"}
	ErrDeparted    = &coordination.Error{Kind: coordination.Fatal, Reason: "coordinator departed"}
	ErrBeforeStart = &coordination.Error{Kind: coordination.Fatal, Reason: "coordinator used before Start"}
	// errHalted is what the guarded store answers a write after a Fatal or
	// an Abort.
	errHalted = &coordination.Error{Kind: coordination.Retryable, Reason: "coordinator stopped; write not issued"}
	// PlanMissing is the Fatal of an operation that needs the plan record
	// after it was deleted outside the library (docs/protocol.md, "Watches
	// and reconcile").
	PlanMissing = &coordination.Error{Kind: coordination.Fatal, Reason: "plan record is missing; it was deleted outside the library"}
)

// NotHeld is the Fenced answer to a call naming a split this worker does
// not hold (never polled, ended, or re-claimed with its Gained unpolled).
func NotHeld(id coordination.SplitID) error {
	return coordination.Errorf(coordination.Fenced, "split %s: not held here; nothing was written", id)
}

// EpochNotHeld is the Fenced answer to a call naming an epoch other than
// the held tenancy's.
func EpochNotHeld(id coordination.SplitID, epoch, held uint64) error {
	return coordination.Errorf(coordination.Fenced, "split %s: epoch %d is not the held tenancy (held: %d); nothing was written", id, epoch, held)
}

// FencedErr is the Fenced result of a write that lost to another owner.
func FencedErr(id coordination.SplitID) error {
	return coordination.Errorf(coordination.Fenced, "split %s: another worker owns it now; nothing was written", id)
}

// keptMoving is the Retryable result of a fenced write whose record moved
// twice under this worker's own earlier writes.
func keptMoving(doing string) error {
	return coordination.Errorf(coordination.Retryable, "%s: the record kept moving under this worker's own writes; retry", doing)
}

// HandBackUnconfirmed is the Retryable result of hand-backs whose write
// did not confirm.
func HandBackUnconfirmed(ids []coordination.SplitID) error {
	return coordination.Errorf(coordination.Retryable, "hand-back did not confirm for splits %v; they are handed back again later, or taken once this worker's session ends", ids)
}

// TwinError is the Fatal of a live twin: another worker runs with this
// worker's InstanceID.
func TwinError(id string) error {
	return coordination.Errorf(coordination.Fatal, "InstanceID %q is in use by another live worker (another session renews presence key %s); give every worker a unique InstanceID, such as its pod name", id, protocol.WorkerKey(id))
}

// SpecMissing is the Fatal of a split record whose spec record is gone.
func SpecMissing(id coordination.SplitID, key string) error {
	return coordination.Errorf(coordination.Fatal, "split %s: spec record %s is missing; it was deleted outside the library", id, key)
}

// SplitRecordDeleted is the Fatal of a split record deleted outside the
// library (docs/protocol.md, "Missing records"): its placement, attempts and
// status are gone, so no worker can place or judge the split.
func SplitRecordDeleted(key string) error {
	return coordination.Errorf(coordination.Fatal,
		"%s: split record deleted outside the library (or lost by the store); the split can no longer be placed or judged: restore the record, or delete the job (coordctl delete-job) and run it again", key)
}

// NoAnswer is the Retryable result of a handle call the root did not
// answer within d.
func NoAnswer(d time.Duration) error {
	return coordination.Errorf(coordination.Retryable, "no answer within %s (store slow or unreachable); the operation may still take effect", d)
}

// StoppedBeforeDone is the Retryable result of a call cut short by the
// run's stop channel.
func StoppedBeforeDone(op string) error {
	return coordination.Errorf(coordination.Retryable, "stopping: %s did not complete before the stop; it may still land", op)
}

// FinalUnconfirmed is the Retryable result of a CommitFinal entry that did
// not settle within d.
func FinalUnconfirmed(id coordination.SplitID, d time.Duration) error {
	return coordination.Errorf(coordination.Retryable, "final commit of split %s did not confirm within %s; it may still land", id, d)
}

// StoreRolledBack is the Fatal of a store rollback (docs/protocol.md, "Store
// rollback"): a read showed key at revision got, below revision seen, which
// this worker already applied or wrote. A key's revision never decreases, so
// the store lost writes it had acknowledged; nothing about the source is
// wrong. The advice is st's (store.RollbackAdvice).
func StoreRolledBack(st store.Store, ks store.Keyspace, key string, got, seen uint64) error {
	return coordination.Errorf(coordination.Fatal,
		"store rollback: %s key %s is at revision %d, below revision %d this worker already saw; the store lost acknowledged writes "+
			"(%s), or restore the job from scratch (coordctl delete-job, then start it again)",
		ks, key, got, seen, store.RollbackAdvice(st))
}

// SplitEpochRolledBack is the Fatal of a store rollback seen in a split
// record's epoch (docs/protocol.md, "Store rollback"): key is at epoch got,
// below epoch held, which this worker's claim wrote. Epochs never
// decrease, so the store lost writes it had acknowledged.
func SplitEpochRolledBack(st store.Store, key string, got, held uint64) error {
	return coordination.Errorf(coordination.Fatal,
		"store rollback: durable key %s is at epoch %d, below epoch %d this worker's claim wrote, and the split's progress record is gone; the store lost acknowledged writes "+
			"(%s), or restore the job from scratch (coordctl delete-job, then start it again); the progress record was not recreated",
		key, got, held, store.RollbackAdvice(st))
}

// StoreErr converts any error from a store call into a coordination error,
// keeping the kind and prefixing what the library was doing.
func StoreErr(doing string, err error) error {
	var ce *coordination.Error
	if errors.As(err, &ce) {
		return &coordination.Error{Kind: ce.Kind, Reason: doing + ": " + ce.Reason, Err: err}
	}
	return &coordination.Error{Kind: coordination.Retryable, Reason: doing + ": " + err.Error(), Err: err}
}

// ReasonOf is the Reason of a coordination error, or the error text.
func ReasonOf(err error) string {
	var ce *coordination.Error
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return err.Error()
}

// CompletedBeforeCut is the Fenced result of a CommitCut that found the
// split completed by an earlier Commit of its tenancy (whose reply was
// lost): the split is done and the cut was not made.
func CompletedBeforeCut(id coordination.SplitID) error {
	return coordination.Errorf(coordination.Fenced, "split %s: an earlier commit completed it; the cut was not made and the split is no longer held", id)
}

// CutCompleted is the Fatal usage error of a CommitCut whose progress is
// completed: a split completes only after its residual exists
// (docs/protocol.md, "Runtime split"), so a cut commit never completes;
// nothing is written.
func CutCompleted(id coordination.SplitID) error {
	return coordination.Errorf(coordination.Fatal, "split %s: a cut commit cannot complete the split; commit the cut, then complete with Commit; nothing was written", id)
}
