package leader

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
)

// observeAssignment plays the watch delivering w's assignment record.
func (lr *leaderRig) observeAssignment(w string) {
	lr.t.Helper()
	a, rev, ok := lr.assignment(w)
	if !ok {
		lr.t.Fatalf("no assignment record for %s", w)
	}
	lr.send(recordmsg.AssignmentChanged{Instance: w, Assignment: a, Rev: rev})
}

func TestLosingLeadershipMidPublishThenTheNextTermPublishes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := newLeaderRig(t, workertest.FinalPlan("a"))
		gate := make(chan struct{})
		lr.st.on("Create", protocol.AssignKey("w1"), reaction{gate: gate})
		lr.goLive()
		lr.mustLead(1)
		lr.takeOver()
		close(gate) // the write resumes after the term ended; its result is stale
		synctest.Wait()
		if _, _, ok := lr.assignment("w1"); ok {
			lr.observeAssignment("w1")
		}
		lr.observeSplits()
		lr.deleteLeaderKey()
		lr.send(recordmsg.LeaderChanged{Deleted: true, Synthesized: true})
		lr.beat()
		lr.mustLead(2)
		a, _, _ := lr.assignment("w1")
		if a.Generation != 2 || len(a.Splits) != 1 {
			t.Fatalf("assignment %+v, want term 2 to publish split a", a)
		}
	})
}

func TestLostAssignmentWritesDoNotSpin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := newLeaderRig(t, workertest.FinalPlan("a"))
		// A record the leader's view lacks: every Create of it loses.
		workertest.Put(t, lr.mem, protocol.AssignKey("w1"), protocol.EncodeAssignment(protocol.AssignmentRecord{}), 0)
		lr.goLive()
		lr.mustLead(1)
		creates := lr.st.count("Create", protocol.AssignKey("w1"))
		if creates < 1 || creates > 3 {
			t.Fatalf("%d Creates of a record the view lacks, want at most 3: a second loss in a row waits for the heartbeat", creates)
		}
		lr.observeAssignment("w1") // the watch catches up
		lr.observeSplits()
		lr.beat()
		if a, _, _ := lr.assignment("w1"); a.Generation != 1 || len(a.Splits) != 1 {
			t.Fatalf("assignment %+v, want generation 1 naming split a once the view caught up", a)
		}
	})
}

func TestAFailedAssignmentWriteRetriesAtTheNextHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := newLeaderRig(t, workertest.FinalPlan("a"))
		failing := reaction{err: coordination.Errorf(coordination.Retryable, "timeout")}
		lr.st.on("Create", protocol.AssignKey("w1"), failing, failing, failing)
		lr.goLive()
		lr.mustLead(1)
		if _, _, ok := lr.assignment("w1"); ok {
			t.Fatal("an assignment record exists although its writes failed")
		}
		lr.st.reset()
		lr.beat()
		if _, _, ok := lr.assignment("w1"); !ok {
			t.Fatal("no assignment record after the heartbeat's retry")
		}
	})
}

func TestRecordsOfMembersGoneForGoodAreDeleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := newLeaderRig(t, workertest.FinalPlan("a"))
		workertest.Put(t, lr.mem, protocol.AssignKey("w9"), protocol.EncodeAssignment(protocol.AssignmentRecord{Splits: []coordination.SplitID{"a"}}), 0)
		lr.observeAssignment("w9")
		lr.goLive()
		lr.mustLead(1)
		if _, _, ok := lr.assignment("w9"); ok {
			t.Fatal("the record of a member gone for good was kept")
		}
	})
}

func TestAPeerJoiningSharesTheSplits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := newLeaderRig(t, workertest.FinalPlan("a", "b", "c", "d"))
		lr.goLive()
		lr.observeSplits()
		lr.observeAssignment("w1")
		for range 7 { // past StartupGrace
			lr.beat()
		}
		lr.observeAssignment("w1")
		lr.send(wire.PresenceChanged{Instance: "w2", Nonce: "nonce-w2", Rev: 2})
		a1, _, _ := lr.assignment("w1")
		a2, _, ok := lr.assignment("w2")
		if !ok || len(a1.Splits)+len(a2.Splits) != 4 || len(a2.Splits) == 0 {
			t.Fatalf("w1 %v, w2 %v (present %v); want the 4 splits shared by both", a1.Splits, a2.Splits, ok)
		}
		lr.send(wire.PresenceChanged{Deleted: true, Instance: "w2", Rev: 3})
		if _, _, ok := lr.assignment("w2"); ok {
			t.Fatal("w2's record outlived its departure with no rebalance delay")
		}
	})
}

// A peer's presence may advertise any lane budget (max_in_flight is a
// uint32 a peer writes): the leader clamps it to what an assignment record
// can carry under the value cap, so the record it writes always fits and no
// value a peer wrote can fail the leader. Before, the peer's record went
// above the cap and every leader in turn failed Fatal.
func TestAHugeAdvertisedBudgetCannotOutgrowTheValueCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := make([]string, 40)
		for i := range ids {
			ids[i] = fmt.Sprintf("%060d", i) // 60-byte split ids
		}
		lr := newLeaderRig(t, workertest.FinalPlan(ids...))
		const valueCap = 1024
		lr.v.ValueCap = valueCap
		lr.goLive()
		lr.send(wire.PresenceChanged{Instance: "w2", Nonce: "nonce-w2", MaxInFlight: math.MaxUint32, Rev: 2})
		lr.mustLead(1)
		lr.observeSplits()
		lr.beat()
		if err := lr.failure(); err != nil {
			t.Fatalf("the leader failed: %v", err)
		}
		for _, w := range []string{"w1", "w2"} {
			a, _, ok := lr.assignment(w)
			if !ok {
				t.Fatalf("no assignment record for %s", w)
			}
			if n := len(protocol.EncodeAssignment(a)); n > valueCap {
				t.Fatalf("%s's assignment is %d bytes, above the cap %d", w, n, valueCap)
			}
		}
		a, _, _ := lr.assignment("w2")
		if want := protocol.AssignmentCapacity(valueCap, 60); len(a.Splits) != want {
			t.Fatalf("w2 is given %d splits, want %d: its budget clamped to what its record can carry", len(a.Splits), want)
		}
	})
}

// withGrace gives a leader rig the default startup grace window (3s).
func withGrace(c *coordination.Config) { c.StartupGrace = coordination.DefaultConfig().StartupGrace }

// A leader that starts leading a fleet in which no live member holds a
// split places nothing that no live member owns until members stop joining
// for StartupGrace/6, then places every split over every member that
// joined by then, balanced (docs/protocol.md, "Assignment and the
// rebalance delay"). Before, w1 got all four splits at once and w2, joining
// 300ms later, got none until the pins ended.
func TestAStartingFleetIsPlacedWhenTheStartupHoldEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := newLeaderRig(t, workertest.FinalPlan("a", "b", "c", "d"), withGrace)
		grace := lr.v.Config.StartupGrace
		lr.goLive()
		lr.mustLead(1)
		lr.observeSplits()
		placed := func() (int, int) {
			a1, _, _ := lr.assignment("w1")
			a2, _, _ := lr.assignment("w2")
			return len(a1.Splits), len(a2.Splits)
		}
		if n1, n2 := placed(); n1+n2 != 0 {
			t.Fatalf("placed %d and %d splits during the startup hold, want none", n1, n2)
		}
		join := 300 * time.Millisecond // before the hold ends at grace/6
		lr.clk.Add(join)
		lr.send(wire.PresenceChanged{Instance: "w2", Nonce: "nonce-w2", Rev: 2})
		lr.clk.Add(grace/6 - time.Millisecond) // the join pushed the end to join+grace/6
		synctest.Wait()
		if n1, n2 := placed(); n1+n2 != 0 {
			t.Fatalf("placed %d and %d splits before the hold ended, want none", n1, n2)
		}
		lr.clk.Add(time.Millisecond) // the hold ends: no heartbeat needed
		synctest.Wait()
		if n1, n2 := placed(); n1 != 2 || n2 != 2 {
			t.Fatalf("placed %d and %d splits when the hold ended, want 2 and 2", n1, n2)
		}
	})
}

// A leader of a running fleet (a live member holds a split in its current
// session: a failover) places unowned splits at once; a restart under the
// same instance id gets its own splits back at once while the rest wait for
// the hold.
func TestTheStartupHoldKeepsBackOnlyWhatNoLiveMemberOwns(t *testing.T) {
	tests := []struct {
		name  string
		nonce string // of the record naming w1 as the owner of split a
		want  []coordination.SplitID
	}{
		{name: "running: a is held in w1's session", nonce: "nonce-w1", want: []coordination.SplitID{"a", "b"}},
		{name: "starting: a names an earlier session of w1", nonce: "nonce-old", want: []coordination.SplitID{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lr := newLeaderRig(t, workertest.FinalPlan("a", "b"), withGrace)
				rec := protocol.SplitRecord{ID: "a", FP: protocol.Fingerprint("job:v1"), Weight: 1, Epoch: 1, Owner: "w1", Nonce: tt.nonce}
				lr.send(recordmsg.RecordsChanged{Records: []recordmsg.RecordChanged{{Split: "a", Record: rec, Rev: 1}}})
				lr.goLive()
				lr.mustLead(1)
				lr.observeSplits()
				if a, _, _ := lr.assignment("w1"); !slices.Equal(a.Splits, tt.want) {
					t.Fatalf("w1 is assigned %v at once, want %v", a.Splits, tt.want)
				}
			})
		})
	}
}

// The publisher takes the lead it runs under (docs/protocol.md,
// "Leadership"): under a lead that ended it writes no assignment record and
// folds no publish result into the view; under a lead that lasts, the same
// calls write the member's record and cache it.
func TestThePublisherRefusesAStaleLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := newPartRig(t, workertest.FinalPlan("a"))
		pub := newPublisher(lr.v, lr.v.Log)
		view := newFleetView(0)
		view.join("w1", 0, "nonce-w1")
		view.records["a"] = splitFacts{status: protocol.StatusRunnable, weight: 1, seen: true}
		stale, live := endedLead(1), newLead(lr.v.Ctx, 1)
		defer live.end()
		landed := publishDone{written: []assignCache{{inst: "w1", rec: protocol.AssignmentRecord{Generation: 1, Splits: []coordination.SplitID{"a"}}, rev: 7}}}

		pub.changed()
		pub.publish(stale, &view, "job:v1", noCuts)
		synctest.Wait()
		if _, _, ok := lr.assignment("w1"); ok || pub.busy {
			t.Fatalf("under an ended lead: record written %v, publish in flight %v; want nothing started", ok, pub.busy)
		}
		if pub.published(stale, landed, &view) || len(view.assigns) != 0 {
			t.Fatalf("a publish result under an ended lead was folded into the view: %+v", view.assigns)
		}
		pub.dirty = false
		pub.holdEnded(stale)
		if pub.dirty {
			t.Fatal("the end of a startup hold armed under an ended lead made the assignment dirty")
		}
		pub.changed()

		pub.publish(live, &view, "job:v1", noCuts)
		synctest.Wait()
		a, _, ok := lr.assignment("w1")
		got := lr.delivered(live)
		if !ok || a.Generation != 1 || !slices.Equal(a.Splits, []coordination.SplitID{"a"}) || len(got) != 1 {
			t.Fatalf("under a live lead: record %+v (written %v), delivered %v; want split a published at generation 1", a, ok, got)
		}
		d, ok := got[0].(publishDone)
		if !ok || !pub.published(live, d, &view) || view.assigns["w1"].rev == 0 || pub.busy {
			t.Fatalf("the live publish's result %+v was not folded into the view: %+v", got[0], view.assigns)
		}
	})
}

// noCuts is a publish's takeCuts when no cut is asked.
func noCuts() cutRequests { return cutRequests{} }
