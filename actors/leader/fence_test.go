package leader

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/store"
)

func TestFenceRebasesOnAConcurrentPlanWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &gatedPlanner{Planner: workertest.FinalPlan("a")}
		lr := newLeaderRig(t, p)
		seen := lr.plan()
		seenRev := lr.planRev
		lr.rewritePlan(func(pl *protocol.PlanRecord) { pl.PlannerState = []byte(`"cursor"`) })
		lr.send(recordmsg.PlanChanged{Plan: seen, Rev: seenRev}, // the watch lags: the leader fences from a stale base
			wire.PresenceChanged{Instance: "w1", Nonce: "nonce-w1", Rev: 1},
			wire.WatchesChanged{Live: true})
		lr.mustLead(1)
		if got := string(p.last().PlannerState); got != `"cursor"` {
			t.Fatalf("planner state %q, want the rebased %q", got, `"cursor"`)
		}
	})
}

func TestFenceStepsDownOnANewerGeneration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &gatedPlanner{Planner: workertest.FinalPlan("a")}
		lr := newLeaderRig(t, p)
		seen, seenRev := lr.plan(), lr.planRev
		lr.rewritePlan(func(pl *protocol.PlanRecord) { pl.Generation = 3 })
		lr.send(recordmsg.PlanChanged{Plan: seen, Rev: seenRev}, wire.WatchesChanged{Live: true})
		lr.mustNotLead()
		if p.calls.Load() != 0 || lr.plan().Generation != 3 {
			t.Fatalf("planner ran %d times, plan generation %d; want no run and generation 3 kept", p.calls.Load(), lr.plan().Generation)
		}
		if lr.failure() != nil {
			t.Fatalf("failure %v, want none", lr.failure())
		}
	})
}

func TestFenceFatal(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(lr *leaderRig)
		reason string
	}{
		{"the plan record was deleted", func(lr *leaderRig) {
			if _, err := lr.mem.Delete(context.Background(), store.Durable, protocol.KeyPlan, store.Revision(lr.planRev)); err != nil {
				lr.t.Fatal(err)
			}
		}, "plan record is missing"},
		{"another job holds the plan record", func(lr *leaderRig) {
			lr.rewritePlan(func(pl *protocol.PlanRecord) { pl.Fingerprint = "other:v1" })
		}, "fingerprint mismatch"},
		{"the plan record is corrupt", func(lr *leaderRig) {
			lr.planRev = workertest.Put(lr.t, lr.mem, protocol.KeyPlan, []byte("{"), lr.planRev)
		}, "plan"},
		{"the store fails for good", func(lr *leaderRig) {
			lr.st.on("Update", protocol.KeyPlan, reaction{err: coordination.Errorf(coordination.Fatal, "bucket deleted")})
		}, "bucket deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &gatedPlanner{Planner: workertest.FinalPlan("a")}
				lr := newLeaderRig(t, p)
				seen, seenRev := lr.plan(), lr.planRev
				tt.break_(lr)
				lr.send(recordmsg.PlanChanged{Plan: seen, Rev: seenRev}, wire.WatchesChanged{Live: true})
				if err := lr.failure(); coordination.KindOf(err) != coordination.Fatal || !reasonHas(err, tt.reason) {
					t.Fatalf("failure %v, want Fatal naming %q", err, tt.reason)
				}
				if p.calls.Load() != 0 {
					t.Fatalf("planner ran %d times after a Fatal fence", p.calls.Load())
				}
			})
		})
	}
}

func TestFenceRetriesTransientErrors(t *testing.T) {
	transient := reaction{err: coordination.Errorf(coordination.Retryable, "timeout")}
	tests := []struct {
		name   string
		script []reaction
		leads  bool
	}{
		{"two failures then a landed fence lead", []reaction{transient, transient}, true},
		{"a failed read after a lost compare is retried", []reaction{{lose: true}}, true},
		{"three failures step down", []reaction{transient, transient, transient}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lr := newLeaderRig(t, workertest.FinalPlan("a"))
				lr.st.on("Update", protocol.KeyPlan, tt.script...)
				if tt.script[0].lose {
					lr.st.on("Get", protocol.KeyPlan, transient)
				}
				lr.goLive()
				if tt.leads {
					lr.mustLead(1)
				} else {
					lr.mustNotLead()
				}
			})
		})
	}
}
