package splitwriter

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
)

// The seam events the split writer raises for the root, the outbox's one
// writer (wire.EventsRaised): the tenancy registry's starts (Gained) and
// involuntary ends (Lost), revoke's requests of held tenancies
// (RevokeRequested), the quarantines its view of the split records shows
// and the verdict. Each is raised in the step that applies what raised it,
// so the root receives them in the order they were applied.

// raise tells the root seam events, in the order given.
func (sw *splitWriterActor) raise(evs ...coordination.Event) {
	sw.v.Tell(wire.EventsRaised{Events: evs}, sw.v.PIDs.Root)
}

// raiseEnds tells the root what it acts on of the ends s applied: a Lost
// for each involuntary end (with a DeclineRevoke's reply PID), and the
// ends of Depart's own hand-back batch.
func (sw *splitWriterActor) raiseEnds(s surrender) {
	m := wire.EventsRaised{Decline: s.decline}
	for _, h := range s.tenancies {
		if s.reason.Involuntary() {
			m.Events = append(m.Events, coordination.Lost{Split: h.Split})
		}
		if s.leftovers {
			m.Departed = append(m.Departed, h.Split)
		}
	}
	if len(m.Events) > 0 || len(m.Departed) > 0 {
		sw.v.Tell(m, sw.v.PIDs.Root)
	}
}

// gained is the Gained of the tenancy a won claim d started at epoch: a
// cut split is read from its primary's descriptor (docs/protocol.md,
// "Runtime split"), and the progress is the one the claim's fence read
// (a cooperative move replays nothing).
func gained(d claimed, epoch uint64) coordination.Gained {
	spec := d.spec
	spec.Descriptor = gainedDescriptor(d.prog.DescriptorOr(spec.Descriptor))
	return coordination.Gained{Split: spec, Epoch: coordination.LeaseEpoch(epoch), Progress: d.prog.Progress()}
}

// gainedDescriptor is the descriptor a Gained carries: d copied, an empty
// one as nil (coordination.SplitSpec).
func gainedDescriptor(d []byte) []byte {
	if len(d) == 0 {
		return nil
	}
	return append([]byte{}, d...)
}

// verdictEvent is the seam event of the verdict the listing gave.
func verdictEvent(stalled bool, completed, quarantined uint64) coordination.Event {
	if stalled {
		return coordination.Stalled{Completed: completed, Quarantined: quarantined}
	}
	return coordination.AllComplete{}
}
