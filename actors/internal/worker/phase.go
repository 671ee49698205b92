package worker

import "github.com/spate-go/coordination/actors/internal/wire"

// JobPhase is where the job stands, as the leader actor has seen it: the
// watches are live, its work is over (the verdict is in or Depart began).
//
// The facts have one origin each: the watch actor (WatchesChanged) and
// the root, which emits the verdict and starts Depart and then tells the
// leader Retire. The leader keeps a copy rather than read a shared one on
// purpose: an actor must see a phase change at its place in its own
// message stream, after every message sent to it before the change, as
// it sees everything else; a shared variable would let it act on a phase
// before it has applied what led to it.
type JobPhase struct {
	Live    bool // the watches are live (WatchesChanged)
	Retired bool // the verdict is in or Depart began (Retire; StepDown too)
}

// Observe folds m into p when it is a phase message, and reports whether it
// was one.
func (p *JobPhase) Observe(m any) bool {
	switch m := m.(type) {
	case wire.WatchesChanged:
		p.Live = m.Live
	case wire.Retire:
		p.Retired = true
	default:
		return false
	}
	return true
}

// Over reports whether this worker's work on the job is over: the verdict
// is in or Depart began.
func (p JobPhase) Over() bool { return p.Retired }
