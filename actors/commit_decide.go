package actors

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/messages"
)

// checkWatermark enforces "progress never regresses" before any write: a
// commit below the committed watermark is Fatal.
func checkWatermark(id coordination.SplitID, rec protocol.ProgressRecord, p coordination.SplitProgress) error {
	if rec.Watermark != nil && p.Watermark < *rec.Watermark {
		return coordination.Errorf(coordination.Fatal, "split %s: commit watermark %d is below the committed watermark %d; a source must never move a watermark backwards", id, p.Watermark, *rec.Watermark)
	}
	return nil
}

// conflictClass is how a lost CAS on a record this worker writes is judged
// from the record read after it (docs/protocol.md, "Commits" and
// "Hand-back, fail, quarantine").
type conflictClass int

const (
	conflictLanded conflictClass = iota + 1 // the intended write (or a completion of this tenancy) is there
	conflictAdopt                           // still this tenancy's and live: adopt, retry once
	conflictFenced                          // another tenancy, terminal, or absent
)

// classifyProgressConflict judges the progress record got (found=false:
// absent) against a commit intended by tenancy epoch of me.
func classifyProgressConflict(me string, epoch uint64, intended protocol.ProgressRecord, found bool, got protocol.ProgressRecord) conflictClass {
	switch {
	case !found || got.Epoch != epoch || got.Owner != me:
		return conflictFenced
	case intended.SameProgress(got) || got.Completed:
		return conflictLanded // this tenancy's write, or its completion, landed unseen
	}
	return conflictAdopt
}

// classifySplitConflict judges the split record got against the write
// intended by the tenancy epoch of me's session nonce.
func classifySplitConflict(me, nonce string, epoch uint64, intended protocol.SplitRecord, found bool, got protocol.SplitRecord) conflictClass {
	switch {
	case !found:
		return conflictFenced
	case got == intended || sameSplitWrite(intended, got):
		return conflictLanded
	case got.Owner == me && got.Nonce == nonce && got.Epoch == epoch && got.Status == protocol.StatusRunnable:
		return conflictAdopt
	}
	return conflictFenced
}

// sameSplitWrite reports whether got carries the intended write (the
// advisory time aside).
func sameSplitWrite(intended, got protocol.SplitRecord) bool {
	got.WrittenAtMs = intended.WrittenAtMs
	return got == intended
}

// surrender is what ending a tenancy may write on its split record.
type surrender int

const (
	surrenderWrite   surrender = iota + 1 // the record names the tenancy: write its end
	surrenderNothing                      // terminal: nothing left to hand back or complete
	surrenderFenced                       // another owner or a later epoch: not this tenancy's to end
)

// judgeSurrender judges split record rec for the end (hand-back or
// completion) of tenancy epoch of me. The session is not checked here: a
// CAS that loses judges it (classifySplitConflict), and Depart's direct
// hand-back, which writes without that rule, checks it itself.
func judgeSurrender(rec protocol.SplitRecord, me string, epoch uint64) surrender {
	switch {
	case rec.Owner != me || rec.Epoch != epoch:
		return surrenderFenced
	case rec.Status.Terminal():
		return surrenderNothing
	}
	return surrenderWrite
}

// movedAway reports whether split record rec shows that tenancy t of me
// ended: a later epoch, or another owner or session.
func movedAway(rec protocol.SplitRecord, me string, t tenancy) bool {
	return rec.Epoch > t.epoch || (rec.Epoch == t.epoch && (rec.Owner != me || rec.Nonce != t.nonce))
}

// verdict judges the job from a listing of split records alone
// (docs/protocol.md, "Completion"). ok is false when no verdict can be given.
func verdict(recs []protocol.SplitRecord, planned uint64) (stalled bool, completed, quarantined uint64, ok bool) {
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

// resolution is what the actors following a surrendered tenancy are told
// about its owner-clearing (fail, hand-back, completion) write: landed,
// fenced by another owner, or unconfirmed (a store error, or Fatal).
func resolution(o casOutcome) messages.HandBackOutcome {
	switch o {
	case casLanded:
		return messages.HandBackLanded
	case casFenced:
		return messages.HandBackFenced
	}
	return messages.HandBackUnconfirmed
}
