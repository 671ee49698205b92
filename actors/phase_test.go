package actors

import (
	"testing"

	"github.com/spate-go/coordination/messages"
)

// TestJobPhase: only the three phase messages change a jobPhase.
func TestJobPhase(t *testing.T) {
	var p jobPhase
	if p.observe(messages.HeartbeatTicked{}) || p != (jobPhase{}) {
		t.Fatalf("a heartbeat changed the phase: %+v", p)
	}
	if !p.observe(messages.WatchesChanged{Live: true}) || !p.live || p.over() {
		t.Fatalf("after live watches: %+v", p)
	}
	if !p.observe(messages.VerdictReached{}) || !p.over() {
		t.Fatalf("after the verdict: %+v", p)
	}
	p = jobPhase{}
	if !p.observe(messages.Departing{}) || !p.departed || !p.over() {
		t.Fatalf("after Departing: %+v", p)
	}
}
