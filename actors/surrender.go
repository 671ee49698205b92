package actors

import "github.com/spate-go/coordination/internal/protocol"

// surrender is what ending a tenancy may write on its split record.
type surrender int

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

const (
	surrenderWrite   surrender = iota + 1 // the record names the tenancy: write its end
	surrenderNothing                      // terminal: nothing left to hand back or complete
	surrenderFenced                       // another owner or a later epoch: not this tenancy's to end
)
