package worker

import "github.com/spate-go/coordination/actors/internal/wire"

// JobPhase is where the job stands, as one actor has seen it: the watches
// are live, the job has its verdict, Depart began. The leader keeps one,
// fed only by the three messages Observe takes.
//
// The facts have one origin each: the watch actor (WatchesChanged), the
// split-writer actor, which takes the verdict, and the root, which relays it and
// starts Depart (VerdictReached, Departing); the root and the split-writer actor
// keep their own flags because they decide them (the root keeps whether the
// watches are live too, as an input of the revocation rules it applies for
// the revoke actor). The followers keep a copy
// rather than read a shared one on purpose: an actor must see a phase
// change at its place in its own message stream, after every message sent
// to it before the change (a claim result, a tenancy change), as it sees
// everything else; a shared variable would let it act on a phase before it
// has applied what led to it.
type JobPhase struct {
	Live     bool // the watches are live (WatchesChanged)
	verdict  bool // the job has its verdict (VerdictReached)
	Departed bool // Depart began (Departing)
}

// Observe folds m into p when it is a phase message, and reports whether it
// was one.
func (p *JobPhase) Observe(m any) bool {
	switch m := m.(type) {
	case wire.WatchesChanged:
		p.Live = m.Live
	case wire.VerdictReached:
		p.verdict = true
	case wire.Departing:
		p.Departed = true
	default:
		return false
	}
	return true
}

// Over reports whether this worker's work on the job is over: the verdict
// is in or Depart began.
func (p JobPhase) Over() bool { return p.verdict || p.Departed }
