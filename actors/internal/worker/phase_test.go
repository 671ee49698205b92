package worker

import (
	"testing"

	"github.com/spate-go/coordination/actors/internal/wire"
)

// TestJobPhase: only the two phase messages change a jobPhase.
func TestJobPhase(t *testing.T) {
	var p JobPhase
	if p.Observe(wire.HeartbeatTicked{}) || p != (JobPhase{}) {
		t.Fatalf("a heartbeat changed the phase: %+v", p)
	}
	if !p.Observe(wire.WatchesChanged{Live: true}) || !p.Live || p.Over() {
		t.Fatalf("after live watches: %+v", p)
	}
	if !p.Observe(wire.Retire{}) || !p.Retired || !p.Over() {
		t.Fatalf("after Retire: %+v", p)
	}
}
