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

// rewritePlan rewrites the plan record behind the leader's back.
func (lr *leaderRig) rewritePlan(f func(*protocol.PlanRecord)) {
	lr.t.Helper()
	pl := lr.plan()
	f(&pl)
	lr.planRev = workertest.Put(lr.t, lr.mem, protocol.KeyPlan, protocol.EncodePlan(pl), lr.planRev)
}

// repeatReaction returns n copies of r.
func repeatReaction(r reaction, n int) []reaction {
	rs := make([]reaction, n)
	for i := range rs {
		rs[i] = r
	}
	return rs
}

// mustNotLead fails unless w1 no longer leads and its key is gone.
func (lr *leaderRig) mustNotLead() {
	lr.t.Helper()
	if lr.leading() {
		lr.t.Fatal("leader gauge 1, want w1 stepped down")
	}
	if l, _, ok := lr.leaderKey(); ok && l.Nonce == "nonce-w1" {
		lr.t.Fatalf("w1's leader key %+v is still in the store", l)
	}
}

func TestLeaderRenewal(t *testing.T) {
	transient := reaction{err: coordination.Errorf(coordination.Retryable, "timeout")}
	repeat := repeatReaction
	tests := []struct {
		name   string
		update []reaction // scripted renewals
		get    []reaction // scripted reads after a lost compare
		beats  int
		leads  bool
	}{
		{"landed renewals keep the lead", nil, nil, 6, true},
		{"a lost reply is proven by the next compare's read", []reaction{{land: true}}, nil, 6, true},
		{"a failed read after a lost compare is retried", []reaction{{land: true}}, []reaction{transient}, 2, true},
		{"renewals failing for a LeaseDuration expire the lead", repeat(transient, 100), nil, 6, false},
		// Before the retry, the renewals at two heartbeats in a row failed
		// and the third heartbeat came a LeaseDuration after the win.
		{"renewals failing at two heartbeats in a row are retried before the lease runs out", repeat(transient, 2), nil, 6, true},
		// Every write lands but reports an error, and no watch event says
		// so: the read back after each failure proves it.
		{"renewals landing without a reply are read back", repeat(reaction{land: true}, 100), nil, 6, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lr := newLeaderRig(t, workertest.FinalPlan("a"))
				lr.goLive()
				lr.mustLead(1)
				_, rev0, _ := lr.leaderKey()
				lr.st.on("Update", protocol.KeyLeader, tt.update...)
				lr.st.on("Get", protocol.KeyLeader, tt.get...)
				for range tt.beats {
					lr.beat()
				}
				if !tt.leads {
					// The term of generation 1 ended; once its key expired,
					// a new term (generation 2) may have begun.
					if l, _, ok := lr.leaderKey(); lr.leading() && ok && l.Generation == 1 {
						t.Fatal("still leading generation 1 after a LeaseDuration without a renewal")
					}
					return
				}
				lr.mustLead(1)
				if _, rev, _ := lr.leaderKey(); rev <= rev0 {
					t.Fatalf("leader key revision %d, want renewals past %d", rev, rev0)
				}
			})
		})
	}
}

func TestLeaderStepsDownWhenAnotherSessionHoldsTheKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := newLeaderRig(t, workertest.FinalPlan("a"))
		lr.goLive()
		lr.mustLead(1)
		_, rev, _ := lr.leaderKey()
		if _, ok, err := lr.mem.Update(context.Background(), store.Ephemeral, protocol.KeyLeader, protocol.EncodeLeader(protocol.LeaderRecord{Owner: "w2", Nonce: "nonce-w2", Generation: 2}), store.Revision(rev)); err != nil || !ok {
			t.Fatalf("overwrite the leader key: %v %v", ok, err)
		}
		lr.beat() // the renewal's compare is lost; the read finds w2's key
		if lr.leading() {
			t.Fatal("still leading after the key became another session's")
		}
		if l, _, ok := lr.leaderKey(); !ok || l.Nonce != "nonce-w2" {
			t.Fatalf("leader key %+v (present %v), want w2's left alone", l, ok)
		}
	})
}

func TestLeaderObservations(t *testing.T) {
	tests := []struct {
		name  string
		msg   func(rev uint64) any
		leads bool
	}{
		{"another session's key ends the lead", func(rev uint64) any {
			return recordmsg.LeaderChanged{Leader: protocol.LeaderRecord{Owner: "w2", Nonce: "nonce-w2"}, Rev: rev + 1}
		}, false},
		{"a stale delete is ignored", func(rev uint64) any { return recordmsg.LeaderChanged{Deleted: true, Rev: rev - 1} }, true},
		{"a newer delete ends the lead", func(rev uint64) any { return recordmsg.LeaderChanged{Deleted: true, Rev: rev + 1} }, false},
		{"a synthesized delete ends the lead", func(uint64) any { return recordmsg.LeaderChanged{Deleted: true, Synthesized: true} }, false},
		{"the session's end ends the lead", func(uint64) any { return wire.SessionChanged{} }, false},
		{"a plan of a newer generation ends the lead", func(uint64) any {
			return recordmsg.PlanChanged{Plan: protocol.PlanRecord{Fingerprint: "job:v1", Generation: 5}, Rev: 1000}
		}, false},
		{"our own key is nothing new", func(rev uint64) any {
			return recordmsg.LeaderChanged{Leader: protocol.LeaderRecord{Owner: "w1", Nonce: "nonce-w1", Generation: 1}, Rev: rev}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lr := newLeaderRig(t, workertest.FinalPlan("a"))
				lr.goLive()
				lr.mustLead(1)
				_, rev, _ := lr.leaderKey()
				lr.send(tt.msg(rev))
				if lr.leading() != tt.leads {
					t.Fatalf("leading %v, want %v", lr.leading(), tt.leads)
				}
			})
		})
	}
}

func TestWatchedRenewalsKeepTheLeadWhileRepliesFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := newLeaderRig(t, workertest.FinalPlan("a"))
		lr.goLive()
		lr.mustLead(1)
		// Every renewal lands but its reply is lost, and every read fails:
		// only the watch shows that they landed.
		lr.st.on("Update", protocol.KeyLeader, repeatReaction(reaction{land: true}, 100)...)
		lr.st.on("Get", protocol.KeyLeader, repeatReaction(reaction{err: coordination.Errorf(coordination.Retryable, "read failed")}, 100)...)
		for range 6 {
			lr.beat()
			_, rev, _ := lr.leaderKey()
			lr.send(recordmsg.LeaderChanged{Leader: protocol.LeaderRecord{Owner: "w1", Nonce: "nonce-w1", Generation: 1}, Rev: rev})
		}
		if !lr.leading() {
			t.Fatal("stepped down although the watch proved every renewal landed")
		}
	})
}

func TestStepDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := newLeaderRig(t, workertest.FinalPlan("a"))
		lr.goLive()
		lr.mustLead(1)
		lr.send(wire.StepDown{ReplyTo: lr.replies})
		lr.mustNotLead()
		if _, _, ok := lr.leaderKey(); ok {
			t.Fatal("leader key still present after StepDown")
		}
		lr.send(wire.StepDown{ReplyTo: lr.replies})
		if n := lr.replied(); n != 2 {
			t.Fatalf("%d StepDownReply, want 2 (leading and not)", n)
		}
		lr.beat()
		lr.send(recordmsg.LeaderChanged{Deleted: true, Synthesized: true})
		if _, _, ok := lr.leaderKey(); ok {
			t.Fatal("a departed worker stood for election again")
		}
	})
}

func TestAWinAfterDepartGivesTheKeyBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := newLeaderRig(t, workertest.FinalPlan("a"))
		gate := make(chan struct{})
		lr.st.on("Create", protocol.KeyLeader, reaction{gate: gate})
		lr.goLive()
		lr.send(wire.Retire{})
		close(gate)
		synctest.Wait()
		if _, _, ok := lr.leaderKey(); ok || lr.leading() {
			t.Fatal("a worker that departed mid-election kept the leader key")
		}
	})
}

func TestVerdictKeepsTheKeyButStopsTheWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &gatedPlanner{Planner: &workertest.Planner{FP: "job:v1", Result: coordination.SplitPlan{Finality: coordination.PlanOpen}}}
		lr := newLeaderRig(t, p)
		lr.goLive()
		lr.mustLead(1)
		lr.send(wire.Retire{})
		_, rev, _ := lr.leaderKey()
		for range 6 { // two replan intervals
			lr.beat()
		}
		lr.mustLead(1)
		if _, now, _ := lr.leaderKey(); now <= rev {
			t.Fatal("the leader key was not renewed after the verdict")
		}
		if p.calls.Load() != 1 {
			t.Fatalf("planner ran %d times, want no replan after the verdict", p.calls.Load())
		}
	})
}

func TestElection(t *testing.T) {
	tests := []struct {
		name  string
		setup func(lr *leaderRig)
		check func(lr *leaderRig)
	}{
		{"a failed Create stands again at the next tick", func(lr *leaderRig) {
			lr.st.on("Create", protocol.KeyLeader, reaction{err: coordination.Errorf(coordination.Retryable, "timeout")})
		}, func(lr *leaderRig) {
			if lr.leading() {
				lr.t.Fatal("leading although the Create failed")
			}
			lr.beat()
			lr.mustLead(1)
		}},
		{"a Fatal Create fails the worker", func(lr *leaderRig) {
			lr.st.on("Create", protocol.KeyLeader, reaction{err: coordination.Errorf(coordination.Fatal, "bucket deleted")})
		}, func(lr *leaderRig) {
			if err := lr.failure(); !reasonHas(err, "bucket deleted") || lr.leading() {
				lr.t.Fatalf("failure %v, leading %v; want the Fatal latched and no lead", err, lr.leading())
			}
		}},
		{"a lost Create leaves the other leader alone", func(lr *leaderRig) {
			if _, ok, err := lr.mem.Create(context.Background(), store.Ephemeral, protocol.KeyLeader, protocol.EncodeLeader(protocol.LeaderRecord{Owner: "w2", Nonce: "nonce-w2", Generation: 1})); err != nil || !ok {
				lr.t.Fatalf("create w2's key: %v %v", ok, err)
			}
		}, func(lr *leaderRig) {
			if l, _, ok := lr.leaderKey(); lr.leading() || !ok || l.Nonce != "nonce-w2" {
				lr.t.Fatalf("leading %v, key %+v; want w2 to keep the lead", lr.leading(), l)
			}
			if lr.plan().Generation != 0 {
				lr.t.Fatal("a worker that lost the election fenced the plan")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lr := newLeaderRig(t, workertest.FinalPlan("a"))
				tt.setup(lr)
				lr.goLive()
				tt.check(lr)
			})
		})
	}
}

// campaignOnce runs one campaign of el and returns the Create's result.
func (lr *leaderRig) campaignOnce(el *election) electDone {
	lr.t.Helper()
	before := len(recorded[electDone](lr))
	el.campaign()
	synctest.Wait()
	got := recorded[electDone](lr)
	if len(got) != before+1 {
		lr.t.Fatalf("%d results of one campaign, want 1", len(got)-before)
	}
	return got[len(got)-1]
}

// The election, driven alone through its verbs, hands out the work lead
// only once the generation fence landed, calls stopped whenever the work
// lead may have ended, and gives up a key it wins after the worker retired
// (docs/protocol.md, "Leadership").
func TestTheElectionHandsOutTheWorkLeadOnlyOnceFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := newPartRig(t, workertest.FinalPlan("a"))
		stops := 0
		el := newElection(lr.v, lr.v.Log, func() { stops++ })
		if el.canCampaign() {
			t.Fatal("the election may stand without a plan record to fence")
		}
		el.observePlan(lr.plan(), lr.planRev)
		if !el.canCampaign() {
			t.Fatal("the election may not stand with a plan record and no leader seen")
		}
		won := lr.campaignOnce(&el)
		if won.outcome != electWon || won.gen != 1 {
			t.Fatalf("campaign %+v, want generation 1 won", won)
		}
		if !el.acquired(won, "job:v1", false) || el.term == nil || el.working() != nil || el.canCampaign() {
			t.Fatalf("after the win: term %v, work lead %v, may stand %v; want a term fencing, no work lead yet", el.term != nil, el.working(), el.canCampaign())
		}
		synctest.Wait()
		fences := lr.delivered(el.term.lead)
		if len(fences) != 1 {
			t.Fatalf("the term delivered %v, want the fence's result", fences)
		}
		w := el.fenced(fences[0].(fenceDone), false)
		if w == nil || w.gen != 1 || el.working() != w || lr.plan().Generation != 1 {
			t.Fatalf("fenced: work lead %v (working %v), plan generation %d; want a generation 1 lead handed out", w, el.working(), lr.plan().Generation)
		}
		el.retire()
		if !w.ended() || el.working() != nil || el.term == nil || stops != 1 {
			t.Fatalf("retired: work lead ended %v, term kept %v, stops %d; want the work lead ended, the key kept, one stop", w.ended(), el.term != nil, stops)
		}
		el.resign(nil)
		synctest.Wait()
		if _, _, ok := lr.leaderKey(); ok || el.term != nil || stops != 2 {
			t.Fatalf("resigned: key present %v, term %v, stops %d; want the key deleted and a second stop", ok, el.term != nil, stops)
		}

		// A key won after the worker retired is given up at once: no fence,
		// no work lead.
		lr.clk.Add(lr.v.Config.LeaseDuration / 3)
		late := lr.campaignOnce(&el)
		if late.outcome != electWon || el.acquired(late, "job:v1", true) || el.term != nil || stops != 3 {
			t.Fatalf("a retired win %+v: term %v, stops %d; want the term ended at once", late, el.term != nil, stops)
		}
		synctest.Wait()
		if _, _, ok := lr.leaderKey(); ok {
			t.Fatal("a retired worker kept the leader key it won")
		}
	})
}
