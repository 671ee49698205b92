package actors

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

// checkWatermark enforces G2 before any write (§6.6): a commit below the
// record's committed watermark is Fatal.
func checkWatermark(id coordination.SplitID, rec protocol.ProgressRecord, p coordination.SplitProgress) error {
	if rec.Watermark != nil && p.Watermark < *rec.Watermark {
		return coordination.Errorf(coordination.Fatal, "split %s: commit watermark %d is below the committed watermark %d; a source must never move a watermark backwards", id, p.Watermark, *rec.Watermark)
	}
	return nil
}

// conflictClass is how a lost CAS on a held (or just surrendered) split's
// record is judged from the record read after it (§18.1, §18.2).
type conflictClass int

const (
	conflictLanded conflictClass = iota + 1 // (a) the intended write is there
	conflictAdopt                           // (b) still ours at the epoch and runnable: adopt, retry once
	conflictFenced                          // (c) another owner, a higher epoch, terminal, absent
)

// classifyConflict judges the record got (found=false: absent) against the
// intended write for tenancy epoch of me.
func classifyConflict(me string, epoch uint64, intended protocol.ProgressRecord, found bool, got protocol.ProgressRecord) conflictClass {
	if !found {
		return conflictFenced
	}
	if sameWrite(intended, got) {
		return conflictLanded
	}
	if got.Owner == me && got.Epoch == epoch && got.Status == protocol.StatusRunnable {
		return conflictAdopt
	}
	return conflictFenced
}

// sameWrite reports whether got already carries the intended write.
func sameWrite(intended, got protocol.ProgressRecord) bool {
	return intended.SameProgress(got) && intended.Status == got.Status && intended.Attempts == got.Attempts
}

// verdict judges the job from a listing alone (§22.2). ok is false when no
// verdict can be given.
func verdict(recs []protocol.ProgressRecord, planned uint64) (stalled bool, completed, quarantined uint64, ok bool) {
	if uint64(len(recs)) < planned {
		return false, 0, 0, false
	}
	for _, r := range recs {
		switch r.Status {
		case protocol.StatusCompleted:
			completed++
		case protocol.StatusQuarantined:
			quarantined++
		default:
			return false, 0, 0, false
		}
	}
	return quarantined > 0, completed, quarantined, true
}
