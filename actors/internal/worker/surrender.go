package worker

import "github.com/spate-go/coordination/internal/protocol"

// Surrender is what ending a tenancy may write on its split record.
type Surrender int

// JudgeSurrender judges split record rec for the end (hand-back or
// completion) of tenancy epoch of me. The session is not checked here: a
// CAS that loses judges it (classifySplitConflict), and Depart's direct
// hand-back, which writes without that rule, checks it itself.
func JudgeSurrender(rec protocol.SplitRecord, me string, epoch uint64) Surrender {
	switch {
	case rec.Owner != me || rec.Epoch != epoch:
		return SurrenderFenced
	case rec.Status.Terminal():
		return SurrenderNothing
	}
	return SurrenderWrite
}

const (
	SurrenderWrite   Surrender = iota + 1 // the record names the tenancy: write its end
	SurrenderNothing                      // terminal: nothing left to hand back or complete
	SurrenderFenced                       // another owner or a later epoch: not this tenancy's to end
)
