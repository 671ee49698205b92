package worker

import (
	"testing"

	"github.com/spate-go/coordination/messages"
)

// TestJobPhase: only the three phase messages change a jobPhase.
func TestJobPhase(t *testing.T) {
	var p JobPhase
	if p.Observe(messages.HeartbeatTicked{}) || p != (JobPhase{}) {
		t.Fatalf("a heartbeat changed the phase: %+v", p)
	}
	if !p.Observe(messages.WatchesChanged{Live: true}) || !p.Live || p.Over() {
		t.Fatalf("after live watches: %+v", p)
	}
	if !p.Observe(messages.VerdictReached{}) || !p.Over() {
		t.Fatalf("after the verdict: %+v", p)
	}
	p = JobPhase{}
	if !p.Observe(messages.Departing{}) || !p.Departed || !p.Over() {
		t.Fatalf("after Departing: %+v", p)
	}
}
