package splitwriter

import "github.com/spate-go/coordination/actors/internal/wire"

// tellHealth tells the root what Healthy reports when it changed: a session
// held since this worker joined, and both watches live (the inputs of the
// claim gate, docs/protocol.md "Sessions", "Watches and reconcile").
func (sw *splitWriterActor) tellHealth() {
	h := wire.HealthChanged{Session: sw.joined && sw.claims.session, Watches: sw.claims.live}
	if h == sw.health {
		return
	}
	sw.health = h
	sw.v.Tell(h, sw.v.PIDs.Root)
}
