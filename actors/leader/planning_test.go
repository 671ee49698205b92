package leader

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/store"
)

// replans is the sum of the replans counter over every outcome.
func (lr *leaderRig) replans() float64 {
	return lr.runs("ok") + lr.runs("noop") + lr.runs("error")
}

func TestPlannerRunFatal(t *testing.T) {
	dup := workertest.FinalPlan("a", "a")
	bigState := workertest.FinalPlan("a", "b")
	bigState.Result.PlannerState = make([]byte, 5<<10)
	tests := []struct {
		name    string
		planner coordination.Planner
		reason  string
		cap     int // the store's value cap; 0: none
	}{
		{"a panic keeps its own reason", &workertest.Planner{FP: "job:v1", Panic: "boom"}, "planner panic: boom", 0},
		{"the planner's Fatal is named as the planner's", &workertest.Planner{FP: "job:v1", Err: coordination.Errorf(coordination.Fatal, "bad config")}, "planner: bad config", 0},
		{"a split planned twice", dup, "planner returned split a more than once", 0},
		{"an invalid split id", workertest.FinalPlan(""), "planner returned an invalid split id", 0},
		// docs/protocol.md "Residual ids": both forms are reserved.
		{"a short-form residual id", workertest.FinalPlan("a", "_a_1_1"), "planner returned split _a_1_1, an id of residual form", 0},
		{"a long-form residual id", workertest.FinalPlan("_0123456789abcdef0123456789abcdef_2_3_h"),
			"planner returned split _0123456789abcdef0123456789abcdef_2_3_h, an id of residual form", 0},
		// Checked whole before any write: before, the publish's Fatal was
		// downgraded to a retry and the planner ran again forever.
		{"a plan record above the value cap", bigState, "plan record is up to 7002 bytes (fingerprint 6 bytes, planner state 5120 bytes), above the store's value cap of 2048 bytes", 2 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lr := newLeaderRig(t, tt.planner)
				lr.v.ValueCap = tt.cap
				lr.goLive()
				err := lr.failure()
				if coordination.KindOf(err) != coordination.Fatal || !reasonHas(err, tt.reason) {
					t.Fatalf("failure %v, want Fatal %q", err, tt.reason)
				}
				if tt.reason == "planner panic: boom" && worker.ReasonOf(err) != tt.reason {
					t.Fatalf("reason %q, want exactly %q", worker.ReasonOf(err), tt.reason)
				}
				if n := lr.splits(); n != 0 {
					t.Fatalf("%d split records written by a run that failed", n)
				}
			})
		})
	}
}

func TestPlannerRunFailuresRetryAtTheNextHeartbeat(t *testing.T) {
	transient := reaction{err: coordination.Errorf(coordination.Retryable, "timeout")}
	tests := []struct {
		name  string
		setup func(lr *leaderRig, p *gatedPlanner)
	}{
		{"the planner fails", func(lr *leaderRig, p *gatedPlanner) {
			p.errs = []error{coordination.Errorf(coordination.Retryable, "source unavailable")}
		}},
		{"seeding fails", func(lr *leaderRig, p *gatedPlanner) {
			lr.st.on("Create", protocol.SplitKey("a"), transient)
		}},
		{"the recount fails", func(lr *leaderRig, p *gatedPlanner) {
			lr.st.on("List", protocol.PrefixSplit, transient)
		}},
		{"the plan publish fails", func(lr *leaderRig, p *gatedPlanner) {
			lr.st.on("Update", protocol.KeyPlan, reaction{}, transient) // the fence lands, the publish fails
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &gatedPlanner{Planner: workertest.FinalPlan("a")}
				lr := newLeaderRig(t, p)
				tt.setup(lr, p)
				lr.goLive()
				lr.mustLead(1)
				if pl := lr.plan(); pl.Finality == coordination.PlanFinal || lr.runs("error") != 1 {
					t.Fatalf("plan %+v, %v failed runs; want the run failed and nothing published", pl, lr.runs("error"))
				}
				lr.beat()
				if pl := lr.plan(); pl.Finality != coordination.PlanFinal || pl.Planned != 1 || lr.runs("ok") != 1 {
					t.Fatalf("after a heartbeat: plan %+v, %v good runs; want the rerun to publish 1 split", pl, lr.runs("ok"))
				}
			})
		})
	}
}

func TestPlanPublishLostToANewerLeaderStepsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := newLeaderRig(t, workertest.FinalPlan("a"))
		lr.st.on("Update", protocol.KeyPlan, reaction{}, reaction{lose: true})
		lr.goLive()
		lr.mustNotLead()
		if lr.runs("error") != 1 || lr.failure() != nil {
			t.Fatalf("%v failed runs, failure %v; want one lost run and no failure", lr.runs("error"), lr.failure())
		}
	})
}

func TestPlanPublishAfterThePlanWasDeletedIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		p := &gatedPlanner{Planner: workertest.FinalPlan("a"), gate: gate}
		lr := newLeaderRig(t, p)
		lr.goLive()
		lr.mustLead(1)
		if _, err := lr.mem.Delete(context.Background(), store.Durable, protocol.KeyPlan, store.Revision(lr.planRev)); err != nil {
			t.Fatal(err)
		}
		close(gate)
		synctest.Wait()
		if err := lr.failure(); !reasonHas(err, "plan record is missing") {
			t.Fatalf("failure %v, want the missing plan record", err)
		}
	})
}

func TestLosingLeadershipMidPlanAppliesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		p := &gatedPlanner{Planner: workertest.FinalPlan("a", "b"), gate: gate}
		lr := newLeaderRig(t, p)
		lr.goLive()
		lr.mustLead(1)
		lr.takeOver()
		close(gate) // the planner ignores its context and returns a plan
		synctest.Wait()
		if n := lr.splits(); n != 0 {
			t.Fatalf("%d split records seeded after leadership was lost", n)
		}
		if pl := lr.plan(); pl.Planned != 0 || pl.Finality == coordination.PlanFinal || lr.replans() != 0 {
			t.Fatalf("plan %+v, %v runs counted; want the stale run discarded", pl, lr.replans())
		}
		if lr.leading() {
			t.Fatal("still leading after another session took the key")
		}
	})
}

func TestVerdictMidPlanCancelsTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		p := &gatedPlanner{Planner: workertest.FinalPlan("a"), gate: gate}
		lr := newLeaderRig(t, p)
		lr.goLive()
		lr.send(wire.Retire{})
		close(gate)
		synctest.Wait()
		if n := lr.splits(); n != 0 || lr.replans() != 0 {
			t.Fatalf("%d split records, %v runs after the verdict; want the run discarded", n, lr.replans())
		}
		lr.mustLead(1)
	})
}

// A run due for a new term waits for the previous term's run, which
// ignores its context, and starts when that one returns.
func TestARunDueForANewTermStartsWhenTheStaleRunEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		p := &gatedPlanner{Planner: workertest.FinalPlan("a"), gate: gate}
		lr := newLeaderRig(t, p)
		lr.goLive()
		lr.mustLead(1)
		lr.deleteLeaderKey()
		lr.send(recordmsg.LeaderChanged{Deleted: true, Synthesized: true})
		if lr.leading() {
			t.Fatal("still leading after the key was deleted")
		}
		lr.beat() // a heartbeat after stepping down, w1 stands again
		lr.mustLead(2)
		if p.calls.Load() != 1 {
			t.Fatalf("planner called %d times while the first run is in flight, want 1", p.calls.Load())
		}
		close(gate)
		synctest.Wait()
		if p.calls.Load() != 2 || lr.splits() != 1 || lr.plan().Finality != coordination.PlanFinal {
			t.Fatalf("planner called %d times, %d splits, plan %+v; want term 2's run to publish", p.calls.Load(), lr.splits(), lr.plan())
		}
	})
}

func TestAnOpenPlanIsReplannedEachInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &gatedPlanner{Planner: &workertest.Planner{FP: "job:v1", Result: coordination.SplitPlan{Finality: coordination.PlanOpen}}}
		lr := newLeaderRig(t, p)
		lr.goLive()
		lr.mustLead(1)
		for range 3 { // one ReplanInterval
			lr.beat()
		}
		if p.calls.Load() != 2 || lr.runs("noop") != 2 {
			t.Fatalf("planner called %d times, %v unchanged runs; want a replan after ReplanInterval", p.calls.Load(), lr.runs("noop"))
		}
	})
}

// While this leader's run seeds, the splits it has seeded so far wait for
// the run's progress report or its end: another trigger of an evaluation,
// such as a presence renewal (which every worker writes once per heartbeat),
// does not publish them. Before, the first renewal after a split appeared
// published it, so a long seeding at scale was evaluated at every renewal
// (60 assignment publishes while 20,000 splits were seeded by 8 workers).
func TestARenewalDuringSeedingPublishesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := newLeaderRig(t, workertest.FinalPlan("a", "b", "c"))
		gate := make(chan struct{})
		lr.st.on("Create", protocol.SplitKey("c"), reaction{gate: gate}) // the run stays in flight
		lr.goLive()
		lr.mustLead(1)
		lr.observeSplits() // a and b, seeded
		writes := func() int {
			return lr.st.count("Create", protocol.AssignKey("w1")) + lr.st.count("Update", protocol.AssignKey("w1"))
		}
		before := writes()
		lr.clk.Add(lr.v.Config.LeaseDuration / 3)
		lr.send(wire.PresenceChanged{Instance: "w1", Nonce: "nonce-w1", Rev: 2}) // a renewal
		if n := writes() - before; n != 0 {
			t.Fatalf("%d assignment writes after a renewal while seeding, want 0", n)
		}
		close(gate)
		synctest.Wait()
		lr.observeSplits()
		if a, _, _ := lr.assignment("w1"); len(a.Splits) != 3 {
			t.Fatalf("assignment %v once the run ended, want all 3 splits", a.Splits)
		}
	})
}

// The planner run takes the lead it runs under (docs/protocol.md,
// "Leadership"): under a lead that ended it starts no run and arms no
// replan timer, and a result delivered under such a lead is ignored; under
// a lead that lasts, the same calls run the planner and apply the result.
func TestThePlanRunnerRefusesAStaleLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &gatedPlanner{Planner: workertest.FinalPlan("a")}
		lr := newPartRig(t, p)
		run := newPlanRunner(lr.v, lr.v.Log)
		run.planner = p
		view := newFleetView(0)
		base := lr.plan()
		open := base
		open.Finality = coordination.PlanOpen
		stale, live := endedLead(1), newLead(lr.v.Ctx, 1)
		defer live.end()

		run.start(stale, base, lr.planRev, &view)
		run.next(stale, open, lr.planRev, &view)
		synctest.Wait()
		if p.calls.Load() != 0 || run.seeding() || run.replan != nil {
			t.Fatalf("under an ended lead: planner called %d times, seeding %v, replan timer %v; want nothing started", p.calls.Load(), run.seeding(), run.replan != nil)
		}
		if o := run.finished(stale, planDone{outcome: planFailed}); o != planDiscarded || run.retryDue() {
			t.Fatalf("a failed run under an ended lead: outcome %v, retry due %v; want it ignored", o, run.retryDue())
		}

		run.start(live, base, lr.planRev, &view)
		synctest.Wait()
		got := lr.delivered(live)
		if p.calls.Load() != 1 || len(got) != 1 {
			t.Fatalf("under a live lead: planner called %d times, delivered %v; want one run and its result", p.calls.Load(), got)
		}
		d, ok := got[0].(planDone)
		if !ok || run.finished(live, d) != planChanged || run.seeding() {
			t.Fatalf("the live run's result %+v was not applied as changed (seeding %v)", got[0], run.seeding())
		}
		run.next(live, open, lr.planRev, &view)
		if run.replan == nil {
			t.Fatal("no replan timer armed for an open plan under a live lead")
		}
		run.stop()
		if o := run.finished(live, planDone{outcome: planFailed}); o != planFailed || !run.retryDue() {
			t.Fatalf("a failed run under a live lead: outcome %v, retry due %v; want a retry due", o, run.retryDue())
		}
	})
}

// A residual-form id the job already has a split record of (seeded before
// ids of residual form were reserved, or a residual) passes validation, so
// such a job keeps working through every later planner run; ids that only
// look like residuals (not canonical) were never reserved.
func TestValidatePlanReservesResidualIDsNotYetKnown(t *testing.T) {
	base := protocol.NewPlan("job:v1", 0)
	tests := []struct {
		name  string
		id    string
		known bool
		fatal bool
	}{
		{"short form, unknown", "_a_1_1", false, true},
		{"short form, known", "_a_1_1", true, false},
		{"long form, unknown", "_0123456789abcdef0123456789abcdef_1_1_h", false, true},
		{"a leading zero is not residual form", "_a_01_1", false, false},
		{"no counter is not residual form", "_a_1", false, false},
		{"an ordinary id", "orders-7", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp := workertest.FinalPlan(tt.id).Result
			known := map[coordination.SplitID]bool{}
			if tt.known {
				known[coordination.SplitID(tt.id)] = true
			}
			err := validatePlan(sp, base, 1, 0, 0, known)
			if got := err != nil; got != tt.fatal {
				t.Fatalf("validatePlan(%s) = %v, want fatal %v", tt.id, err, tt.fatal)
			}
			if tt.fatal && (coordination.KindOf(err) != coordination.Fatal || !reasonHas(err, "reserved for runtime-split residuals")) {
				t.Fatalf("err %v, want Fatal naming the reservation", err)
			}
		})
	}
}
