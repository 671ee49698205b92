package leader

import (
	"maps"
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

// held plays the watch delivering split records of splits runnable at
// epoch, owned by owner in session nonce ("" for none), with parent.
func (lr *leaderRig) held(owner, nonce string, epoch, weight uint64, parent coordination.SplitID, ids ...coordination.SplitID) {
	var run recordmsg.RecordsChanged
	for _, id := range ids {
		rec := protocol.SplitRecord{ID: id, FP: protocol.Fingerprint("job:v1"), Weight: weight, Epoch: epoch, Status: protocol.StatusRunnable,
			Owner: owner, Nonce: nonce, Parent: parent}
		lr.revs++
		run.Records = append(run.Records, recordmsg.RecordChanged{Split: id, Record: rec, Rev: 100 + lr.revs})
	}
	lr.send(run)
}

// estimates plays the watch delivering w1's presence carrying es.
func (lr *leaderRig) estimates(es ...wire.Estimate) {
	lr.revs++
	lr.send(wire.PresenceChanged{Instance: "w1", Nonce: "nonce-w1", Rev: 100 + lr.revs, Remaining: es})
}

// cutRig is a leader rig of w1 (MaxInFlight lanes, CutInterval interval)
// leading generation 1 of a job of splits a and b, both held by w1 at
// epoch 1 and weighing 1, their assignment observed.
func cutRig(t *testing.T, lanes int, interval time.Duration) *leaderRig {
	lr := newLeaderRig(t, workertest.FinalPlan("a", "b"), func(c *coordination.Config) { c.MaxInFlight, c.CutInterval = lanes, interval })
	lr.goLive()
	lr.mustLead(1)
	lr.observeSplits()
	lr.observeAssignment("w1")
	lr.held("w1", "nonce-w1", 1, 1, "", "a", "b")
	return lr
}

// The leader asks the owner of the largest reported split to cut it when a
// lane would idle (docs/protocol.md, "Who decides"): one request, counter 1,
// keep_ppm as protocol.CutOf gives it, in the owner's assignment record;
// not at once after it started leading, not again within CutInterval, and
// not at all once the residual, placed like any split, takes the idle lane.
// Nothing is written at a heartbeat that decides nothing.
func TestTheLeaderAsksACutWhenALaneIdles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := cutRig(t, 3, time.Second)
		lr.estimates(wire.Estimate{Split: "a", Epoch: 1, Remaining: 1000}, wire.Estimate{Split: "b", Epoch: 1, Remaining: 800})
		_, rev0, _ := lr.assignment("w1")

		lr.beat() // half a CutInterval after it started leading
		if a, rev, _ := lr.assignment("w1"); a.Cuts != nil || rev != rev0 {
			t.Fatalf("a new leader asked at once: record %+v at revision %d (was %d)", a, rev, rev0)
		}

		lr.beat() // a CutInterval after it started leading
		keep, _, ok := protocol.CutOf(1000, (1000+800)/3.0, 1)
		if !ok {
			t.Fatal("CutOf finds the cut not worth it")
		}
		want := []protocol.CutRequest{{Split: "a", Epoch: 1, Counter: 1, KeepPPM: keep, Parts: 1}}
		a, rev1, _ := lr.assignment("w1")
		if !slices.Equal(a.Cuts, want) || !slices.Equal(a.Splits, []coordination.SplitID{"a", "b"}) {
			t.Fatalf("assignment %+v, want splits a, b and the cut requests %v", a, want)
		}
		lr.observeAssignment("w1")

		lr.beat() // within CutInterval of the ask: b is not asked
		if a, rev, _ := lr.assignment("w1"); rev != rev1 {
			t.Fatalf("assignment rewritten within CutInterval of the ask: %+v", a)
		}

		// The residual appears: it is placed like any split, by its weight,
		// and the request is no longer outstanding.
		lr.held("", "", 0, 400, "a", protocol.ResidualID("a", 1, 1))
		a, rev2, _ := lr.assignment("w1")
		if !slices.Contains(a.Splits, protocol.ResidualID("a", 1, 1)) || a.Cuts != nil {
			t.Fatalf("assignment %+v after the residual appeared, want it placed and no request", a)
		}
		lr.observeAssignment("w1")
		lr.estimates(wire.Estimate{Split: "a", Epoch: 1, Remaining: 600}, wire.Estimate{Split: "b", Epoch: 1, Remaining: 800})
		lr.beat() // the residual waits for the one free lane: nothing idles
		lr.beat()
		lr.held("w1", "nonce-w1", 1, 400, "a", protocol.ResidualID("a", 1, 1)) // w1 claims it within LeaseDuration
		lr.beat()
		lr.beat()
		if a, rev, _ := lr.assignment("w1"); rev != rev2 {
			t.Fatalf("assignment rewritten with no lane idle: %+v", a)
		}
	})
}

// A second cut of a tenancy carries the next counter once the first's
// residual is in the view, and a request not answered within CutInterval
// is asked again.
func TestTheLeaderCountsCutsFromTheResidualsItSaw(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := cutRig(t, 4, 0) // CutInterval 0: one heartbeat
		lr.estimates(wire.Estimate{Split: "a", Epoch: 1, Remaining: 1000})
		lr.beat()
		a, rev1, _ := lr.assignment("w1")
		if len(a.Cuts) != 1 || a.Cuts[0].Counter != 1 {
			t.Fatalf("assignment %+v, want one request of counter 1", a)
		}
		lr.observeAssignment("w1")
		lr.beat() // unanswered for a CutInterval: asked again, and written again
		a, rev2, _ := lr.assignment("w1")
		if len(a.Cuts) != 1 || a.Cuts[0].Counter != 1 || rev2 == rev1 {
			t.Fatalf("assignment %+v at revision %d (was %d), want the request asked again", a, rev2, rev1)
		}
		lr.observeAssignment("w1")
		lr.held("w1", "nonce-w1", 1, 500, "a", protocol.ResidualID("a", 1, 1))
		lr.observeAssignment("w1")
		lr.beat()
		a, _, _ = lr.assignment("w1")
		if len(a.Cuts) != 1 || a.Cuts[0].Split != "a" || a.Cuts[0].Counter != 2 {
			t.Fatalf("assignment %+v, want a's second cut asked with counter 2", a)
		}
	})
}

// No lane idles, or cuts are off: nothing is asked, and nothing written.
func TestTheLeaderAsksNoCutWithoutAnIdleLane(t *testing.T) {
	for _, tt := range []struct {
		name     string
		lanes    int
		interval time.Duration
	}{
		{"every lane holds a split", 2, 0},
		{"cuts are off", 8, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lr := cutRig(t, tt.lanes, tt.interval)
				lr.estimates(wire.Estimate{Split: "a", Epoch: 1, Remaining: 1000}, wire.Estimate{Split: "b", Epoch: 1, Remaining: 800})
				_, rev0, _ := lr.assignment("w1")
				for range 6 {
					lr.beat()
				}
				if a, rev, _ := lr.assignment("w1"); a.Cuts != nil || rev != rev0 {
					t.Fatalf("assignment %+v at revision %d (was %d), want no request and no write", a, rev, rev0)
				}
			})
		})
	}
}

// An estimate counts only for the split's current epoch, and residuals
// count per tenancy.
func TestCutInputTakesEstimatesOfTheCurrentTenancy(t *testing.T) {
	f := newFleetView(0)
	f.join("w1", 4, "n1")
	f.join("w2", 0, "n2")
	put := func(id coordination.SplitID, s splitFacts) {
		s.seen, s.status = true, protocol.StatusRunnable
		f.records[id] = s
		f.observeResidual(id, s.parent, s.weight)
	}
	put("a", splitFacts{owner: "w1", nonce: "n1", epoch: 2, weight: 1})
	put("b", splitFacts{owner: "w1", nonce: "n1", epoch: 3, weight: 1})
	put("c", splitFacts{owner: "w1", nonce: "old", epoch: 1, weight: 7}) // an ended session's
	put(protocol.ResidualID("a", 2, 1), splitFacts{weight: 5, parent: "a"})
	put(protocol.ResidualID("a", 2, 3), splitFacts{owner: "w2", nonce: "n2", epoch: 1, weight: 5, parent: "a"})
	put(protocol.ResidualID("a", 1, 9), splitFacts{weight: 5, parent: "a"})
	t0 := time.Unix(1000, 0)
	f.observeEstimates("w1", []wire.Estimate{{Split: "a", Epoch: 2, Remaining: 90}, {Split: "b", Epoch: 2, Remaining: 80}}, t0)
	f.observeEstimates("w2", []wire.Estimate{{Split: "a", Epoch: 2, Remaining: 70}}, t0) // not its split
	f.observeEstimates("w9", []wire.Estimate{{Split: "c", Epoch: 1, Remaining: 70}}, t0) // not live
	cfg := coordination.DefaultConfig()
	cfg.MaxInFlight = 6
	in := f.cutInput(cfg, 0, map[coordination.SplitID]outstandingCut{"b": {}}, nil)
	if h := f.cutInput(cfg, 0, map[coordination.SplitID]outstandingCut{"a": {}}, nil).Held; len(h) != 1 || !h[0].Outstanding {
		t.Fatalf("held %v with a outstanding, want a outstanding", h)
	}
	if h := f.cutInput(cfg, 0, nil, map[coordination.SplitID]time.Time{"a": t0}).Held; len(h) != 1 || !h[0].Outstanding {
		t.Fatalf("held %v with a asked within the interval, want it counted as outstanding", h)
	}
	byID := map[coordination.SplitID]protocol.CutHeld{}
	for _, h := range in.Held {
		byID[h.Split] = h
	}
	if h := byID["a"]; !h.Reported || h.Remaining != 90 || h.Cuts != 3 || h.Outstanding || h.Epoch != 2 {
		t.Fatalf("a: %+v, want its epoch-2 estimate and 3 cuts seen", h)
	}
	if len(in.Held) != 1 || len(in.Unheld) != 3 {
		t.Fatalf("held %v, unheld %v: want a alone held with an estimate (b's is for epoch 2, held at 3); c and two residuals unheld", in.Held, in.Unheld)
	}
	members := map[string]protocol.CutMember{}
	for _, m := range in.Members {
		members[m.Instance] = m
	}
	if members["w1"] != (protocol.CutMember{Instance: "w1", Budget: 4, Held: 2}) || members["w2"] != (protocol.CutMember{Instance: "w2", Budget: 6, Held: 1}) {
		t.Fatalf("members %v, want w1 with its own budget and w2 with the default", in.Members)
	}
}

// A request is outstanding until its residual appears or CutInterval
// passes; a publish writes it once, when asked.
func TestCutRequestsAreOutstandingUntilTheResidualOrTheInterval(t *testing.T) {
	const interval = time.Second
	t0 := time.Unix(1000, 0)
	f := newFleetView(0)
	f.join("w1", 4, "n1")
	f.records["a"] = splitFacts{owner: "w1", nonce: "n1", epoch: 1, weight: 1, seen: true, status: protocol.StatusRunnable}
	f.records["b"] = splitFacts{owner: "w1", nonce: "n1", epoch: 1, weight: 1, seen: true, status: protocol.StatusRunnable}
	f.observeEstimates("w1", []wire.Estimate{{Split: "a", Epoch: 1, Remaining: 100}, {Split: "b", Epoch: 1, Remaining: 90}}, t0)
	cfg := coordination.DefaultConfig()
	cfg.MinCutWeight = 1
	var c cutter
	if c.evaluate(t0.Add(interval), interval, &f, cfg, 0) {
		t.Fatal("asked while not leading")
	}
	c.lead(t0)
	if c.evaluate(t0.Add(interval/2), interval, &f, cfg, 0) {
		t.Fatal("a new leader asked within CutInterval of its start")
	}
	if !c.evaluate(t0.Add(interval), interval, &f, cfg, 0) {
		t.Fatal("nothing asked with idle lanes and two reported splits")
	}
	rs := c.take(t0.Add(interval), interval, &f)
	if len(rs.by["w1"]) != 2 || !rs.fresh["w1"] {
		t.Fatalf("take %+v, want both requests, fresh", rs)
	}
	if rs := c.take(t0.Add(interval), interval, &f); len(rs.by["w1"]) != 2 || rs.fresh["w1"] {
		t.Fatalf("take again %+v, want both requests, no longer fresh", rs)
	}
	f.records[protocol.ResidualID("a", 1, 1)] = splitFacts{seen: true, status: protocol.StatusRunnable, weight: 50, parent: "a"}
	f.observeResidual(protocol.ResidualID("a", 1, 1), "a", 50)
	if rs := c.take(t0.Add(interval+interval/2), interval, &f); !slices.Equal(rs.by["w1"], []protocol.CutRequest{c.outstanding["b"].req}) {
		t.Fatalf("take %+v after a's residual appeared, want b's request alone", rs)
	}
	if rs := c.take(t0.Add(2*interval), interval, &f); rs.by != nil {
		t.Fatalf("take %+v a CutInterval after the ask, want none", rs)
	}
	c.stop()
	if c.evaluate(t0.Add(10*interval), interval, &f, cfg, 0) {
		t.Fatal("asked after the work lead ended")
	}
}

// A request that would take the record over the value cap is left out; a
// request for a split the record does not name is never written.
func TestRecordCutsFitTheRecord(t *testing.T) {
	splits := []coordination.SplitID{"a", "b"}
	want := []protocol.CutRequest{{Split: "a", Epoch: 1, Counter: 1, KeepPPM: 500_000, Parts: 1}, {Split: "b", Epoch: 1, Counter: 1, KeepPPM: 500_000, Parts: 1},
		{Split: "c", Epoch: 1, Counter: 1, KeepPPM: 500_000, Parts: 1}}
	if got := recordCuts(want, 1, splits, 0); !slices.Equal(got, want[:2]) {
		t.Fatalf("recordCuts without a cap = %v, want a's and b's", got)
	}
	one := len(protocol.EncodeAssignment(protocol.AssignmentRecord{Generation: 1, Splits: splits, Cuts: want[:1]}))
	if got := recordCuts(want, 1, splits, one); !slices.Equal(got, want[:1]) {
		t.Fatalf("recordCuts under a cap of %d bytes = %v, want a's alone", one, got)
	}
	if got := recordCuts(want, 1, splits, one-1); got != nil {
		t.Fatalf("recordCuts under a cap of %d bytes = %v, want none", one-1, got)
	}
}

// A request whose publish failed is written by the retry at the next
// heartbeat, although nothing else changed.
func TestACutRequestWhosePublishFailedIsWrittenByTheRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := cutRig(t, 4, 0)
		lr.estimates(wire.Estimate{Split: "a", Epoch: 1, Remaining: 1000})
		lr.st.on("Update", protocol.AssignKey("w1"), reaction{err: coordination.Errorf(coordination.Retryable, "timeout")})
		lr.clk.Add(lr.v.Config.LeaseDuration / 3) // the bound of the start of leading lifts: the cutter asks; the write fails
		synctest.Wait()
		if a, _, _ := lr.assignment("w1"); a.Cuts != nil {
			t.Fatalf("assignment %+v although its write failed", a)
		}
		lr.clk.Add(lr.v.Config.LeaseDuration / 6) // within the interval of the ask: no new decision
		lr.send(wire.HeartbeatTicked{})
		if a, _, _ := lr.assignment("w1"); len(a.Cuts) != 1 {
			t.Fatalf("assignment %+v after the retry, want the request", a)
		}
	})
}

// A request of several parts stays outstanding until the residual of its
// last part appears: the owner cuts them one after the other, and none of
// their counters is asked again meanwhile.
func TestARequestOfPartsIsOutstandingUntilItsLastResidual(t *testing.T) {
	const interval = time.Second
	t0 := time.Unix(1000, 0)
	f := newFleetView(0)
	c := cutter{leadingSince: t0, outstanding: map[coordination.SplitID]outstandingCut{
		"a": {owner: "w1", at: t0, req: protocol.CutRequest{Split: "a", Epoch: 2, Counter: 4, KeepPPM: protocol.EqualKeepPPM(3), Parts: 3}}}}
	for _, tt := range []struct {
		seen        uint64
		outstanding bool
		pending     int
	}{{0, true, 3}, {3, true, 3}, {4, true, 2}, {5, true, 1}, {6, false, 0}} {
		f.cuts[cutKey{"a", 2}] = tt.seen
		cc := cutter{leadingSince: c.leadingSince, outstanding: maps.Clone(c.outstanding)}
		if p := cc.pending(&f); p != tt.pending {
			t.Fatalf("with residual %d of the parts 4..6 seen: %d pending, want %d", tt.seen, p, tt.pending)
		}
		if got := len(cc.take(t0, interval, &f).by["w1"]) == 1; got != tt.outstanding {
			t.Fatalf("with residual %d of the parts 4..6 seen: outstanding %v, want %v", tt.seen, got, tt.outstanding)
		}
	}
}

// The cutter evaluates when the bound of the start of leading lifts, not
// only at heartbeats: a heartbeat that comes just before it would put the
// first decision a whole interval late.
func TestTheCutterAsksWhenTheBoundOfLeadingLifts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		interval := time.Second
		lr := cutRig(t, 4, interval)
		lr.estimates(wire.Estimate{Split: "a", Epoch: 1, Remaining: 1000})
		lr.clk.Add(interval) // no heartbeat: the bound from the start of leading lifts
		synctest.Wait()
		a, _, _ := lr.assignment("w1")
		if len(a.Cuts) != 1 || a.Cuts[0].Split != "a" || a.Cuts[0].Counter != 1 {
			t.Fatalf("assignment %+v when the bound lifted, want a's request", a)
		}
	})
}

// A split that completes frees a lane: once the rate bound lifted, the
// cutter evaluates at once rather than at the next heartbeat.
func TestACompletedSplitMakesTheCutterEvaluateAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		interval := time.Second
		lr := cutRig(t, 2, interval) // both lanes busy with a and b: nothing to cut
		lr.estimates(wire.Estimate{Split: "a", Epoch: 1, Remaining: 1000})
		lr.clk.Add(interval) // the bound lifts; no lane idles
		synctest.Wait()
		if a, _, _ := lr.assignment("w1"); len(a.Cuts) != 0 {
			t.Fatalf("assignment %+v with no lane idle, want no request", a)
		}
		lr.clk.Add(interval / 4)
		lr.revs++
		done := protocol.SplitRecord{ID: "b", FP: protocol.Fingerprint("job:v1"), Weight: 1, Epoch: 1, Status: protocol.StatusCompleted, Owner: "w1", Nonce: "nonce-w1"}
		lr.send(recordmsg.RecordsChanged{Records: []recordmsg.RecordChanged{{Split: "b", Record: done, Rev: 100 + lr.revs}}})
		if a, _, _ := lr.assignment("w1"); len(a.Cuts) != 1 || a.Cuts[0].Split != "a" {
			t.Fatalf("assignment %+v once b completed, want a's request without a heartbeat", a)
		}
	})
}

// A lane freed within a quarter interval of the last evaluation is cut for
// when that quarter ends, not at the next heartbeat; and a split asked is
// not asked again within the interval while another is.
func TestALaneFreedSoonAfterAnEvaluationIsCutForAQuarterLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		interval := time.Second
		lr := newLeaderRig(t, workertest.FinalPlan("a", "b", "c"), func(c *coordination.Config) { c.MaxInFlight, c.CutInterval = 3, interval })
		lr.goLive()
		lr.mustLead(1)
		lr.observeSplits()
		lr.observeAssignment("w1")
		lr.held("w1", "nonce-w1", 1, 1, "", "a", "b", "c")
		lr.estimates(wire.Estimate{Split: "a", Epoch: 1, Remaining: 1000}, wire.Estimate{Split: "b", Epoch: 1, Remaining: 900})
		lr.clk.Add(interval)
		synctest.Wait()
		complete := func(id coordination.SplitID) {
			lr.revs++
			done := protocol.SplitRecord{ID: id, FP: protocol.Fingerprint("job:v1"), Weight: 1, Epoch: 1, Status: protocol.StatusCompleted, Owner: "w1", Nonce: "nonce-w1"}
			lr.send(recordmsg.RecordsChanged{Records: []recordmsg.RecordChanged{{Split: id, Record: done, Rev: 100 + lr.revs}}})
		}
		lr.clk.Add(interval / 4) // past the quarter after the evaluation the bound of leading armed
		complete("c")            // one lane idles: a, the largest, is asked at once
		a, _, _ := lr.assignment("w1")
		if len(a.Cuts) != 1 || a.Cuts[0].Split != "a" {
			t.Fatalf("assignment %+v once c completed, want a's request", a)
		}
		lr.observeAssignment("w1")
		lr.held("w1", "nonce-w1", 1, 500, "a", protocol.ResidualID("a", 1, 1)) // a's residual takes the lane
		lr.clk.Add(interval / 8)
		complete(protocol.ResidualID("a", 1, 1)) // within the quarter: put off
		if a, _, _ := lr.assignment("w1"); slices.ContainsFunc(a.Cuts, func(r protocol.CutRequest) bool { return r.Split == "b" }) {
			t.Fatalf("assignment %+v within a quarter interval of the last evaluation, want nothing new yet", a)
		}
		lr.clk.Add(interval / 8) // the quarter ends: b asked, a not again (asked within the interval)
		synctest.Wait()
		a, _, _ = lr.assignment("w1")
		if len(a.Cuts) != 1 || a.Cuts[0].Split != "b" {
			t.Fatalf("assignment %+v a quarter interval after the evaluation, want b's request alone", a)
		}
	})
}

// A residual claimed stands in with its weight for the estimate its owner
// has not reported yet, so it can be cut before the owner's next
// heartbeat; once the owner's presence reports after the claim, what it
// reports stands.
func TestAClaimedResidualStandsInWithItsWeightUntilItsOwnerReports(t *testing.T) {
	t0 := time.Unix(1000, 0)
	f := newFleetView(0)
	f.join("w1", 4, "n1")
	f.observeEstimates("w1", nil, t0)
	r := protocol.ResidualID("a", 1, 1)
	facts := splitFacts{owner: "w1", nonce: "n1", epoch: 1, weight: 500, parent: "a", seen: true, status: protocol.StatusRunnable}
	f.records[r] = facts
	if !f.observeResidualTenancy(r, &splitFacts{}, &facts, t0.Add(time.Millisecond)) {
		t.Fatal("a residual's claim not reported as one")
	}
	if f.observeResidualTenancy(r, &facts, &facts, t0.Add(2*time.Millisecond)) {
		t.Fatal("the same tenancy seen again reported as a claim")
	}
	cfg := coordination.DefaultConfig()
	if h := f.cutInput(cfg, 0, nil, nil).Held; len(h) != 1 || h[0].Split != r || h[0].Remaining != 500 || !h[0].Reported {
		t.Fatalf("held %+v, want the residual standing in with its weight 500", h)
	}
	f.observeEstimates("w1", nil, t0.Add(time.Second)) // reported since, without it
	if h := f.cutInput(cfg, 0, nil, nil).Held; len(h) != 0 {
		t.Fatalf("held %+v after the owner reported without it, want none", h)
	}
	f.observeEstimates("w1", []wire.Estimate{{Split: r, Epoch: 1, Remaining: 200}}, t0.Add(2*time.Second))
	if h := f.cutInput(cfg, 0, nil, nil).Held; len(h) != 1 || h[0].Remaining != 200 {
		t.Fatalf("held %+v, want the owner's estimate 200", h)
	}
	done := facts
	done.status = protocol.StatusCompleted
	f.observeResidualTenancy(r, &facts, &done, t0.Add(3*time.Second))
	if _, ok := f.residualHeldAt[r]; ok {
		t.Fatal("a completed residual still counted as held")
	}
	// The owner's presence reporting on a residual arrives before the
	// residual's claimed record (they are watched apart): the report
	// stands, and the residual is in Held once.
	r2 := protocol.ResidualID("a", 1, 2)
	f.observeEstimates("w1", []wire.Estimate{{Split: r2, Epoch: 1, Remaining: 300}}, t0.Add(4*time.Second))
	f.records[r2] = facts
	f.observeResidualTenancy(r2, &splitFacts{}, &facts, t0.Add(5*time.Second))
	if h := f.cutInput(cfg, 0, nil, nil).Held; len(h) != 1 || h[0].Split != r2 || h[0].Remaining != 300 {
		t.Fatalf("held %+v, want r2 once, at its reported 300", h)
	}
}

// A parent weighs, for the assignment, its weight less its residuals':
// balancing by its full weight would move splits for work that moved
// already. A residual seen again is not subtracted twice.
func TestAParentWeighsWhatItsResidualsLeftIt(t *testing.T) {
	f := newFleetView(0)
	f.join("w1", 0, "")
	f.records["a"] = splitFacts{seen: true, status: protocol.StatusRunnable, weight: 100, owner: "w1"}
	weightOf := func() uint64 {
		in, _ := f.assignInput(coordination.DefaultConfig(), "job:v1", 0)
		for _, s := range in.Splits {
			if s.ID == "a" {
				return s.Weight
			}
		}
		t.Fatal("a not in the assignment input")
		return 0
	}
	f.observeResidual(protocol.ResidualID("a", 1, 1), "a", 30)
	f.observeResidual(protocol.ResidualID("a", 1, 1), "a", 30) // the residual's record again (a claim)
	if w := weightOf(); w != 70 {
		t.Fatalf("a weighs %d after a residual of 30, want 70", w)
	}
	f.observeResidual(protocol.ResidualID("a", 1, 2), "a", 90)
	if w := weightOf(); w != 1 {
		t.Fatalf("a weighs %d after residuals of 120, want the least weight 1", w)
	}
}

// pinnedOnW1 returns a leading rig whose w1 holds splits a to d and reports
// estimates of a, b and c, after w2 joined and a heartbeat published.
func pinnedOnW1(t *testing.T) *leaderRig {
	t.Helper()
	lr := newLeaderRig(t, workertest.FinalPlan("a", "b", "c", "d"), func(c *coordination.Config) { c.MaxInFlight, c.StartupGrace = 4, 0 })
	lr.goLive()
	lr.mustLead(1)
	lr.observeSplits()
	lr.observeAssignment("w1")
	lr.held("w1", "nonce-w1", 1, 10, "", "a", "b", "c", "d")
	lr.estimates(wire.Estimate{Split: "a", Epoch: 1, Remaining: 9}, wire.Estimate{Split: "b", Epoch: 1, Remaining: 8},
		wire.Estimate{Split: "c", Epoch: 1, Remaining: 7})
	lr.revs++
	lr.send(wire.PresenceChanged{Instance: "w2", Nonce: "nonce-w2", Rev: 100 + lr.revs})
	lr.beat()
	return lr
}

// A split whose owner reports an estimate of it is kept on its owner by the
// assignment: cuts divide it when lanes would idle, where a move would stall
// a lane for the drain. (The member it would have gone to is left short,
// as by any pin: its idle lanes are what cuts fill.)
func TestAReportedSplitIsNotMovedToBalance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := pinnedOnW1(t)
		a, _, _ := lr.assignment("w1")
		for _, id := range []coordination.SplitID{"a", "b", "c"} {
			if !slices.Contains(a.Splits, id) {
				t.Fatalf("w1's assignment %v moved %s, a split it reports an estimate of", a.Splits, id)
			}
		}
		if b, _, ok := lr.assignment("w2"); !ok || slices.ContainsFunc(b.Splits, func(id coordination.SplitID) bool { return id != "d" }) {
			t.Fatalf("w2's assignment %v (written %v), want at most d, the split not reported", b.Splits, ok)
		}
	})
}

// A split whose owner stops reporting an estimate of it is no longer
// pinned, and the presence that says so makes the assignment changed: the
// split is balanced at once, not at the next unrelated change (a lane
// idled about 5 s before).
func TestAPinThatEndsWithTheEstimateIsBalancedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := pinnedOnW1(t)
		if b, _, _ := lr.assignment("w2"); slices.ContainsFunc(b.Splits, func(id coordination.SplitID) bool { return id != "d" }) {
			t.Fatalf("w2's assignment %v, want at most d while a, b and c are pinned", b.Splits)
		}
		lr.estimates() // w1 no longer reports any: the pins end
		if b, _, _ := lr.assignment("w2"); len(b.Splits) != 2 {
			t.Fatalf("w2's assignment %v after the pins ended, want two of the four without waiting for another change", b.Splits)
		}
	})
}

// A lane reserved for a split in transit (published to w2, still held by
// w1 while it drains) is not idle: the cutter does not cut another split to
// fill it.
func TestALaneReservedForASplitInTransitIsNotIdle(t *testing.T) {
	f := newFleetView(0)
	f.indexPublished()
	f.join("w1", 2, "n1")
	f.join("w2", 1, "n2")
	for _, id := range []coordination.SplitID{"a", "b"} {
		f.records[id] = splitFacts{owner: "w1", nonce: "n1", epoch: 1, weight: 100, seen: true, status: protocol.StatusRunnable}
	}
	f.cacheAssign(assignCache{inst: "w1", rec: protocol.AssignmentRecord{Generation: 1, Splits: []coordination.SplitID{"a"}}, rev: 1})
	f.cacheAssign(assignCache{inst: "w2", rec: protocol.AssignmentRecord{Generation: 1, Splits: []coordination.SplitID{"b"}}, rev: 2})
	f.observeEstimates("w1", []wire.Estimate{{Split: "a", Epoch: 1, Remaining: 1000}}, time.Unix(1000, 0))
	cfg := coordination.DefaultConfig()
	in := f.cutInput(cfg, 0, nil, nil)
	if idle := in.IdleLanes(); idle != 0 {
		t.Fatalf("idle lanes %d (members %+v), want 0: w2's one lane is reserved for b", idle, in.Members)
	}
	in.Now, in.Interval = time.Unix(1000, 0), time.Second
	if asks := protocol.DecideCuts(in); len(asks) != 0 {
		t.Fatalf("asked %+v to fill a lane reserved for a split in transit", asks)
	}
}

// A presence that never claims (here "rogue", advertising 4096 lanes, kept
// alive by a peer with write access) counts one lane, not 4096: only
// members that claimed in their session count their free lanes, so the
// leader asks w1 for w1's free lanes and one more, not for thousands of
// residuals (it made 4,078 of one split in 8 s).
func TestAPresenceThatNeverClaimsDoesNotShredASplit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := cutRig(t, 4, time.Second) // w1 holds a and b: two free lanes
		lr.revs++
		lr.send(wire.PresenceChanged{Instance: "rogue", Nonce: "nonce-rogue", MaxInFlight: 4096, Rev: 100 + lr.revs})
		lr.estimates(wire.Estimate{Split: "a", Epoch: 1, Remaining: 1_000_000})
		lr.beat()
		lr.beat()
		a, _, _ := lr.assignment("w1")
		if len(a.Cuts) != 1 || a.Cuts[0].Split != "a" || a.Cuts[0].Parts > 3 {
			t.Fatalf("cut requests %+v, want one cut into at most 3 parts: w1's two free lanes and the rogue's one", a.Cuts)
		}
	})
}

// The cutter counts a member's free lanes only once the member claimed in
// its current session (a split record names it with that session, or the
// view saw one do so): any other member counts one lane.
func TestOnlyMembersThatClaimedCountTheirLanes(t *testing.T) {
	f := newFleetView(0)
	f.join("w1", 8, "n1")     // holds a split
	f.join("w2", 8, "n2")     // completed one in this session
	f.join("w3", 8, "n3")     // claimed, then handed it back
	f.join("new", 8, "n4")    // joined, no claim yet
	f.join("rogue", 0, "r")   // advertises the default, never claims
	f.join("w5", 8, "n5-now") // claimed in an earlier session only
	f.records["a"] = splitFacts{owner: "w1", nonce: "n1", epoch: 1, weight: 1, seen: true, status: protocol.StatusRunnable}
	f.records["b"] = splitFacts{owner: "w2", nonce: "n2", epoch: 1, weight: 1, seen: true, status: protocol.StatusCompleted}
	f.records["c"] = splitFacts{owner: "w5", nonce: "n5-before", epoch: 1, weight: 1, seen: true, status: protocol.StatusCompleted}
	f.claimed["w3"] = "n3"
	budgets := map[string]uint32{}
	for _, m := range f.cutInput(coordination.DefaultConfig(), 0, nil, nil).Members {
		budgets[m.Instance] = m.Budget
	}
	want := map[string]uint32{"w1": 8, "w2": 8, "w3": 8, "new": 1, "rogue": 1, "w5": 1}
	if !maps.Equal(budgets, want) {
		t.Fatalf("budgets %v, want %v", budgets, want)
	}
}
