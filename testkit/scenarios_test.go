package testkit

import (
	"strings"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// Scenario tests of SPEC §30.5 and issue #4, each on a fleet of real
// coordinators in a synctest bubble. The fleet checks the invariants of
// §30.4 after every step.

// §2 G1, §14, §16, §22: racing workers partition a final plan disjointly and
// all see AllComplete.
func TestFleetTwoWorkersSplitFinalPlanDisjointly(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(6)
		w1 := f.Start("w1", p)
		w2 := f.Start("w2", p)
		f.Until("both workers hold three splits", func() bool {
			return allHeld(f, splits, "") && len(w1.HeldIDs()) == 3 && len(w2.HeldIDs()) == 3
		})
		for _, s := range w1.HeldIDs() {
			if w2.Holds(s) {
				t.Fatalf("split %s held by both workers", s)
			}
		}
		w1.Policy.Work, w2.Policy.Work = WorkComplete, WorkComplete
		f.Until("both workers see the verdict", f.AllSettled)
		for _, m := range []*Member{w1, w2} {
			if _, ok := m.Verdict().(coordination.AllComplete); !ok {
				t.Fatalf("%s verdict = %#v, want AllComplete", m.ID(), m.Verdict())
			}
		}
		f.CheckVerdicts()
		for _, s := range splits {
			if v, _ := f.Record(s); v.Status != "completed" || v.Attempts != 0 {
				t.Fatalf("split %s record %s, want completed with no attempt charged", s, v)
			}
		}
	})
}

// §14, §16, §21.2, §22 at a larger size: four workers share sixty weighted
// splits under a lane budget, one crashes and a newcomer joins mid-way, and
// every worker still sees AllComplete.
func TestFleetLargerFleetCompletesThroughChurn(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		weights := make([]uint64, 60)
		for i := range weights {
			weights[i] = uint64(1 + i%5)
		}
		splits := Splits(60, weights...)
		p := NewTestPlanner(jobFP, splits...)
		var ms []*Member
		for _, id := range []string{"w1", "w2", "w3", "w4"} {
			m := f.Start(id, p, setMaxInFlight(12))
			m.Policy.Work = WorkCommit
			ms = append(ms, m)
		}
		f.Until("48 splits are held", func() bool {
			n := 0
			for _, m := range ms {
				n += len(m.HeldIDs())
			}
			return n == 48
		})
		f.Crash("w2")
		w5 := f.Start("w5", p, setMaxInFlight(12))
		for _, m := range []*Member{ms[0], ms[2], ms[3], w5} {
			m.Policy.Work = WorkComplete
		}
		f.Until("the verdict", f.AllSettled)
		f.CheckVerdicts()
		for _, m := range f.Live() {
			if _, ok := m.Verdict().(coordination.AllComplete); !ok {
				t.Fatalf("%s verdict %#v, want AllComplete", m.ID(), m.Verdict())
			}
		}
	}, WithUntilBudget(60*time.Second))
}

// §21.2, §16.3 Expired, §2 G8: a crashed owner's splits move only after its
// lease, with committed progress carried, a higher epoch and one attempt
// charged.
func TestFleetCrashedOwnerSplitsMoveAfterLease(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(4)
		w1 := f.Start("w1", p)
		w2 := f.Start("w2", p)
		w1.Policy.Work, w2.Policy.Work = WorkCommit, WorkCommit
		f.Until("both hold and committed", func() bool {
			if !allHeld(f, splits, "") || len(w1.HeldIDs()) != 2 {
				return false
			}
			for _, h := range w1.Held() {
				if h.Committed == nil {
					return false
				}
			}
			return true
		})
		before := w1.Held()
		f.Crash("w1")
		f.Advance(lease / 2)
		for s := range before {
			if w2.Holds(s) {
				t.Fatalf("split %s taken %v after the crash, before the owner's lease could expire", s, lease/2)
			}
		}
		f.Until("w2 takes over w1's splits", func() bool { return allHeld(f, splits, "w2") })
		for s, old := range before {
			h, _ := w2.Tenancy(s)
			if h.Epoch <= old.Epoch {
				t.Fatalf("split %s: new epoch %d not above the crashed owner's %d", s, h.Epoch, old.Epoch)
			}
			if !sameProgress(h.Carried, old.Committed) {
				t.Fatalf("split %s: carried %s, want the crashed owner's commit %s", s, progressString(h.Carried), progressString(old.Committed))
			}
			vs := f.Checker().Versions(s)
			for _, v := range vs {
				if !v.Progress && v.Epoch == uint64(h.Epoch) && v.Owner == "w2" && v.Attempts != 1 {
					t.Fatalf("split %s: expired claim %s, want exactly one attempt charged", s, v)
				}
			}
		}
	})
}

// handOverSetup starts w1 alone with four splits, then w2, with w1 ignoring
// revocations under a long drain deadline, and waits until the leader has
// revoked two of w1's splits for w2.
func handOverSetup(f *Fleet) (w1, w2 *Member, revoked []coordination.SplitID) {
	splits, p := newJob(4)
	long := setDrainDeadline(20 * lease)
	w1 = f.Start("w1", p, long)
	w1.Policy.Revoke = RevokeIgnore
	f.Until("w1 holds every split", func() bool { return allHeld(f, splits, "w1") })
	w2 = f.Start("w2", p, long)
	f.Until("w1 is asked to give up two splits", func() bool { return len(w1.RevokeRequests()) == 2 })
	return w1, w2, w1.RevokeRequests()
}

// §6.9, §18.4, §2 G8: a graceful Release lets the assigned peer claim in less
// than one lease, charging no attempt.
func TestFleetReleaseHandsOverWithinLease(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		w1, w2, revoked := handOverSetup(f)
		if err := w1.Release(revoked...); err != nil {
			t.Fatalf("release: %v", err)
		}
		took := f.Until("w2 claims the released splits", func() bool { return allHeld(f, revoked, "w2") })
		if took >= lease {
			t.Fatalf("hand-over took %v, want less than one lease (%v)", took, lease)
		}
		for _, s := range revoked {
			if v, _ := f.Record(s); v.Attempts != 0 {
				t.Fatalf("split %s: %s, want no attempt charged", s, v)
			}
			if err := w1.Commit(s, coordination.SplitProgress{Watermark: 1}); coordination.KindOf(err) != coordination.Fenced {
				t.Fatalf("commit after release: %v, want Fenced", err)
			}
		}
		if w1.Losses() != 0 {
			t.Fatalf("w1 lost %d splits, want none after a voluntary release", w1.Losses())
		}
		_ = w2
	})
}

// §6.12, §21.1, §2 G8: Depart hands every split to the peer in less than
// one lease, charging no attempt.
func TestFleetDepartHandsOverWithinLease(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(4)
		w1 := f.Start("w1", p)
		f.Start("w2", p)
		f.Until("both hold two", func() bool { return allHeld(f, splits, "") && len(w1.HeldIDs()) == 2 })
		gone := w1.HeldIDs()
		if err := w1.Depart(); err != nil {
			t.Fatalf("depart: %v", err)
		}
		took := f.Until("w2 claims the departed worker's splits", func() bool { return allHeld(f, splits, "w2") })
		if took >= lease {
			t.Fatalf("hand-over after Depart took %v, want less than one lease (%v)", took, lease)
		}
		for _, s := range gone {
			if v, _ := f.Record(s); v.Attempts != 0 {
				t.Fatalf("split %s: %s, want no attempt charged after Depart", s, v)
			}
		}
		if _, err := w1.Coordinator().Poll(); err != nil {
			t.Fatalf("Poll after Depart: %v, want nil", err)
		}
	})
}

// §16.5, §21.3: a restart reusing its InstanceID reclaims its splits at
// once (well within a lease), charging one attempt each.
func TestFleetSameIDRestartReclaimsAtOnce(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(3)
		w1 := f.Start("w1", p)
		w1.Policy.Work = WorkCommit
		f.Until("w1 holds every split", func() bool { return allHeld(f, splits, "w1") })
		f.Advance(f.Step())
		before := w1.Held()
		f.Crash("w1")
		w1 = f.Start("w1", p)
		took := f.Until("the restarted w1 reclaims its splits", func() bool { return allHeld(f, splits, "w1") })
		t.Logf("reclaimed %v after the restart", took)
		if took >= lease {
			t.Fatalf("reclaim took %v, want less than one lease (%v)", took, lease)
		}
		for s, old := range before {
			h, _ := w1.Tenancy(s)
			if h.Epoch <= old.Epoch || !sameProgress(h.Carried, old.Cut()) {
				t.Fatalf("split %s: reclaimed at epoch %d carrying %s; before: epoch %d cut %s", s, h.Epoch, progressString(h.Carried), old.Epoch, progressString(old.Cut()))
			}
			if v, _ := f.Record(s); v.Attempts != 1 {
				t.Fatalf("split %s: %s, want one attempt charged for the reclaim", s, v)
			}
		}
	})
}

// §16.3, §19: splits beyond MaxInFlight wait in the queue and are never
// quarantined; the job still completes.
func TestFleetSplitsBeyondMaxInFlightWait(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(5)
		w1 := f.Start("w1", p, setMaxInFlight(2))
		w1.Policy.Work = WorkHold
		f.Until("w1 fills its lanes", func() bool { return len(w1.HeldIDs()) == 2 })
		f.Advance(3 * lease)
		if n := len(w1.HeldIDs()); n != 2 {
			t.Fatalf("w1 holds %d splits, want its MaxInFlight of 2", n)
		}
		w1.Policy.Work = WorkComplete
		f.Until("the queue drains", f.AllSettled)
		if _, ok := w1.Verdict().(coordination.AllComplete); !ok {
			t.Fatalf("verdict = %#v, want AllComplete", w1.Verdict())
		}
		if q := w1.Quarantines(); len(q) != 0 {
			t.Fatalf("quarantined %v, want none", q)
		}
		for _, s := range splits {
			if v, _ := f.Record(s); v.Attempts != 0 {
				t.Fatalf("split %s: %s, want no attempt charged for waiting", s, v)
			}
		}
	})
}

// §2 G3, §6.6, §11.6, §17.4: a partitioned worker self-fences, a peer
// finishes, and the zombie's commit after healing is Fenced and writes
// nothing.
func TestFleetPartitionedZombieCommitIsFenced(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(4)
		w1 := f.Start("w1", p)
		w2 := f.Start("w2", p)
		f.Until("both hold two", func() bool { return allHeld(f, splits, "") && len(w1.HeldIDs()) == 2 })
		zombie := w1.HeldIDs()
		f.Partition("w1")
		f.Until("w2 takes every split", func() bool { return allHeld(f, splits, "w2") })
		f.Until("w1 self-fences", func() bool { return len(w1.HeldIDs()) == 0 })
		if n := len(lostSplits(w1)); n != len(zombie) {
			t.Fatalf("w1 lost %d splits, want %d (self-fence emits Lost)", n, len(zombie))
		}
		f.Heal("w1")
		for _, s := range zombie {
			before := len(f.Checker().Versions(s))
			err := w1.Coordinator().Commit(s, coordination.SplitProgress{Watermark: 99})
			wantKind(t, "zombie commit of "+string(s), err, coordination.Fenced)
			f.Pump()
			if after := len(f.Checker().Versions(s)); after != before {
				t.Fatalf("zombie commit of %s wrote %d versions", s, after-before)
			}
		}
		w2.Policy.Work = WorkComplete
		f.Until("the job completes", f.AllSettled)
		f.CheckVerdicts()
	})
}

// §6.6, §2 G2: a commit below the committed watermark is Fatal before any
// write, and the coordinator ends.
func TestFleetRegressingWatermarkIsFatal(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		p := NewTestPlanner(jobFP, Splits(1)...)
		w1 := f.Start("w1", p)
		w1.Policy.ExpectFatal = true
		f.Until("w1 holds s00", func() bool { return w1.Holds("s00") })
		if err := w1.Commit("s00", coordination.SplitProgress{Watermark: 10}); err != nil {
			t.Fatalf("commit 10: %v", err)
		}
		f.Pump()
		before := len(f.Checker().Versions("s00"))
		err := w1.Coordinator().Commit("s00", coordination.SplitProgress{Watermark: 5})
		want := "split s00: commit watermark 5 is below the committed watermark 10; a source must never move a watermark backwards"
		wantReason(t, "regressing commit", err, coordination.Fatal, want)
		f.Pump()
		if after := len(f.Checker().Versions("s00")); after != before {
			t.Fatalf("a regressing commit wrote %d versions", after-before)
		}
		wantReason(t, "Poll after the regressing commit", w1.Err(), coordination.Fatal, want)
	})
}

// §17.3: two live processes sharing an InstanceID are Fatal.
func TestFleetLiveTwinsAreFatal(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		p := NewTestPlanner(jobFP, Splits(2)...)
		w1 := f.Start("w1", p)
		w1.Policy.ExpectFatal = true
		f.Until("w1 holds both splits", func() bool { return len(w1.HeldIDs()) == 2 })
		twin := f.StartTwin("w1-twin", "w1", p)
		twin.Policy.ExpectFatal = true
		f.Until("a twin fails", func() bool { return w1.Err() != nil || twin.Err() != nil })
		prefix := `InstanceID "w1" is in use by another live worker`
		for _, m := range []*Member{w1, twin} {
			if err := m.Err(); err != nil && (coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), prefix)) {
				t.Fatalf("%s failed with %v, want Fatal %q", m.ID(), err, prefix)
			}
		}
	})
}

// §12, §13.4, §13.6: a leader crash hands planning over; the new leader
// replans under a higher generation and the replan is idempotent.
func TestFleetLeaderCrashHandsPlanningOver(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(6)
		for _, id := range []string{"w1", "w2", "w3"} {
			f.Start(id, p)
		}
		f.Until("every split is held", func() bool { return allHeld(f, splits, "") })
		leader := f.Leader()
		if leader == "" {
			t.Fatal("no leader")
		}
		plan, _ := f.Plan()
		runs := p.Runs()
		versions := make(map[coordination.SplitID]int)
		for _, s := range splits {
			versions[s] = len(f.Checker().Versions(s))
		}
		f.Crash(leader)
		f.Until("a new leader plans", func() bool {
			l := f.Leader()
			return l != "" && l != leader && p.Runs() > runs
		})
		f.Until("the survivors hold every split", func() bool { return allHeld(f, splits, "") })
		after, _ := f.Plan()
		if after.Generation <= plan.Generation || after.Planned != uint64(len(splits)) || after.Finality != coordination.PlanFinal {
			t.Fatalf("plan after failover = %+v (before %+v), want a higher generation, the same planned count, final", after, plan)
		}
		for _, s := range splits {
			if v := f.Checker().Versions(s); v[0].Revision == 0 || len(v) < versions[s] {
				t.Fatalf("split %s: history shrank", s)
			}
			if vs := f.Checker().Versions(s); vs[0].Epoch != 0 || countSeeds(vs) != 1 {
				t.Fatalf("split %s was seeded more than once: %v", s, vs)
			}
		}
		entries, _ := f.Store().List(t.Context(), store.Durable, protocol.PrefixSplit)
		if len(entries) != len(splits) {
			t.Fatalf("%d progress records after the replan, want %d", len(entries), len(splits))
		}
	})
}

func countSeeds(vs []RecordVersion) int {
	n := 0
	for _, v := range vs {
		if !v.Deleted && v.Epoch == 0 && v.Owner == "" {
			n++
		}
	}
	return n
}

// §13.1, §13.6, §22.1: an open plan grows across replans and the job
// completes only after the plan is sealed; a never-final plan never ends.
func TestFleetOpenPlanGrowsAndCompletesOnlyWhenSealed(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		stages := [][]coordination.PlannedSplit{SplitsFrom("a", 0, 2), SplitsFrom("b", 0, 2), SplitsFrom("c", 0, 2)}
		p := NewGrowingPlanner(jobFP, stages...)
		w1 := f.Start("w1", p)
		w2 := f.Start("w2", p)
		w1.Policy.Work, w2.Policy.Work = WorkComplete, WorkComplete
		f.Until("the verdict", f.AllSettled)
		all := append(append(ids(stages[0]), ids(stages[1])...), ids(stages[2])...)
		for _, s := range all {
			if v, ok := f.Record(s); !ok || v.Status != "completed" {
				t.Fatalf("split %s: %s at the verdict, want completed", s, v)
			}
		}
		if p.Runs() < 3 {
			t.Fatalf("planner ran %d times, want at least 3 (one per stage)", p.Runs())
		}
		for _, m := range []*Member{w1, w2} {
			if _, ok := m.Verdict().(coordination.AllComplete); !ok {
				t.Fatalf("%s verdict %#v, want AllComplete", m.ID(), m.Verdict())
			}
		}
		f.CheckVerdicts()
	})
	RunFleet(t, func(t *testing.T, f *Fleet) {
		p := NewOpenPlanner(jobFP, Splits(2)...)
		w1 := f.Start("w1", p)
		w1.Policy.Work = WorkComplete
		f.Until("every split completes", func() bool {
			for _, s := range []coordination.SplitID{"s00", "s01"} {
				if v, ok := f.Record(s); !ok || v.Status != "completed" {
					return false
				}
			}
			return true
		})
		f.Advance(3 * lease)
		if w1.Verdict() != nil {
			t.Fatalf("an open plan yielded %#v", w1.Verdict())
		}
	})
}

// §19, §22, §2 G6: a poison split runs exactly MaxAttempts tenancies, is
// quarantined, and the job ends Stalled on every worker.
func TestFleetPoisonSplitQuarantinedThenStalled(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		p := NewTestPlanner(jobFP, Splits(2)...)
		poison := Policy{Work: WorkComplete, FailSplits: map[coordination.SplitID]bool{"s00": true}}
		w1 := f.Start("w1", p)
		w2 := f.Start("w2", p)
		w1.Policy, w2.Policy = poison, poison
		f.Until("the verdict", f.AllSettled)
		want := coordination.Stalled{Completed: 1, Quarantined: 1}
		for _, m := range []*Member{w1, w2} {
			if m.Verdict() != want {
				t.Fatalf("%s verdict %#v, want %#v", m.ID(), m.Verdict(), want)
			}
			if a := m.Quarantines()["s00"]; a != 4 {
				t.Fatalf("%s saw Quarantined{s00, %d}, want 4 attempts", m.ID(), a)
			}
		}
		if n := countGains(f, "s00"); n != 4 {
			t.Fatalf("s00 ran %d tenancies, want exactly MaxAttempts (4)", n)
		}
		f.CheckVerdicts()
	})
}

// §22.3, §2 G9: a standby that never held a split receives AllComplete.
func TestFleetStandbyReceivesAllComplete(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		p := NewTestPlanner(jobFP, Splits(1)...)
		w1 := f.Start("w1", p)
		f.Until("w1 holds s00", func() bool { return w1.Holds("s00") })
		standby := f.Start("w2", p)
		f.Advance(lease)
		w1.Policy.Work = WorkComplete
		f.Until("the verdict", f.AllSettled)
		for _, ev := range standby.Log() {
			if _, ok := ev.(coordination.Gained); ok {
				t.Fatalf("the standby gained a split: %v", standby.Log())
			}
		}
		if _, ok := standby.Verdict().(coordination.AllComplete); !ok {
			t.Fatalf("standby verdict %#v, want AllComplete", standby.Verdict())
		}
		f.CheckVerdicts()
	})
}

// §10.3: a worker started with another fingerprint fails Fatal with the
// exact mismatch text.
func TestFleetFingerprintMismatchIsFatal(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		f.Start("w1", NewTestPlanner(jobFP, Splits(1)...))
		f.Advance(f.Step())
		w2 := f.Start("w2", NewTestPlanner("job:v2", Splits(1)...))
		w2.Policy.ExpectFatal = true
		f.Until("w2 fails", func() bool { return w2.Err() != nil })
		want := protocol.FingerprintMismatch(jobFP, "job:v2")
		wantReason(t, "w2", w2.Err(), coordination.Fatal, want.Reason)
	})
}

// §17.2, §19.1: a renewal that reported an error but landed is adopted: no
// Lost, no attempt, same epoch.
func TestFleetMaybeLandedRenewalIsAdopted(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		p := NewTestPlanner(jobFP, Splits(1)...)
		w1 := f.Start("w1", p)
		f.Until("w1 holds s00", func() bool { return w1.Holds("s00") })
		epoch := w1.Held()["s00"].Epoch
		fault := w1.Store().MaybeLandNextWrite(Match{Keyspace: store.Ephemeral, Prefix: protocol.WorkerKey("w1"), Ops: OpUpdate})
		f.Until("a renewal is maybe-landed", fault.Fired)
		f.Advance(3 * lease)
		if w1.Losses() != 0 || !w1.Holds("s00") || w1.Held()["s00"].Epoch != epoch {
			t.Fatalf("after a maybe-landed renewal: %s (losses %d), want s00 still held at epoch %d", w1, w1.Losses(), epoch)
		}
		if v, _ := f.Record("s00"); v.Attempts != 0 || v.Epoch != uint64(epoch) {
			t.Fatalf("record %s, want epoch %d and no attempt", v, epoch)
		}
	})
}

// Every presence and leader renewal lands but its reply is lost, and every
// read of those keys fails, for five leases: the watch shows the landed
// writes carrying this session's nonce, which confirms them, so the worker
// keeps its session, its splits and its leadership (docs/protocol.md,
// "Sessions"). Without the watch's confirmation it self-fences after one
// lease and every split is lost and re-claimed with a charged attempt.
func TestFleetLandedRenewalsWithLostRepliesKeepTheSession(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		p := NewTestPlanner(jobFP, Splits(2)...)
		w1 := f.Start("w1", p)
		f.Until("w1 holds both splits", func() bool { return len(w1.HeldIDs()) == 2 && f.Leader() == "w1" })
		before := w1.Held()
		st := w1.Store()
		presence := st.MaybeLandEveryWrite(Match{Keyspace: store.Ephemeral, Prefix: protocol.WorkerKey("w1"), Ops: OpUpdate})
		leader := st.MaybeLandEveryWrite(Match{Keyspace: store.Ephemeral, Prefix: protocol.KeyLeader, Ops: OpUpdate})
		st.FailReads(store.Ephemeral, "")
		f.Advance(5 * lease)
		if !presence.Fired() || !leader.Fired() {
			t.Fatal("the renewals were never faulted")
		}
		if w1.Losses() != 0 || f.Leader() != "w1" {
			t.Fatalf("after five leases of lost replies: %s (losses %d, leader %q), want every split kept and still leading", w1, w1.Losses(), f.Leader())
		}
		for id, h := range before {
			if now, ok := w1.Tenancy(id); !ok || now.Epoch != h.Epoch {
				t.Fatalf("split %s: tenancy %+v, want still held at epoch %d", id, now, h.Epoch)
			}
			if v, _ := f.Record(id); v.Attempts != 0 {
				t.Fatalf("split %s: record %s, want no attempt charged", id, v)
			}
		}
	})
}

// §15.2: a dropped assignment publish is republished and the newcomer
// claims its share.
func TestFleetDroppedAssignmentPublishIsRepublished(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(4)
		w1 := f.Start("w1", p)
		f.Until("w1 holds every split", func() bool { return allHeld(f, splits, "w1") })
		fault := w1.Store().DropNextWrite(Match{Prefix: protocol.AssignKey("w2"), Ops: OpCreate | OpUpdate})
		w2 := f.Start("w2", p)
		f.Until("w2 claims its share", func() bool { return len(w2.HeldIDs()) == 2 })
		if !fault.Fired() {
			t.Fatal("the assignment publish for w2 was never dropped")
		}
	})
}

// §15.2, §31.2: an assignment write that landed but reported an error is
// adopted from the watch; the leader neither loops nor stops publishing.
func TestFleetMaybeLandedAssignmentPublishSettles(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(3)
		w1 := f.Start("w1", p)
		f.Until("w1 holds a split", func() bool { return len(w1.HeldIDs()) > 0 })
		f.Partition("w1")
		var fault *Fault
		f.ArmNextStart(func(fs *FaultStore) {
			fault = fs.MaybeLandNextWrite(Match{Prefix: protocol.PrefixAssign, Ops: OpCreate | OpUpdate})
		})
		w3 := f.Start("w3", p)
		f.Until("w3 leads after a maybe-landed publish", func() bool { return f.Leader() == "w3" && fault.Fired() })
		f.Until("w3 holds every split", func() bool { return allHeld(f, splits, "w3") })
		f.Heal("w1")
		w3.Policy.Work = WorkComplete
		w1.Policy.Work = WorkComplete
		f.Until("the verdict", f.AllSettled)
		f.CheckVerdicts()
	})
}

// A hand-back whose write is dropped still surrenders the split locally; the
// record still names the live session, so it is a leftover that this worker
// re-claims without charge (docs/protocol.md, "Claim candidates").
func TestFleetDroppedHandBackStillSurrenders(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		p := NewTestPlanner(jobFP, Splits(1)...)
		w1 := f.Start("w1", p)
		f.Until("w1 holds s00", func() bool { return w1.Holds("s00") })
		epoch := w1.Held()["s00"].Epoch
		fault := w1.Store().DropNextWrite(Match{Prefix: protocol.SplitKey("s00"), Ops: OpUpdate, Value: OwnerNull()})
		err := w1.Coordinator().Release("s00")
		wantReason(t, "release with a dropped hand-back", err, coordination.Retryable, "hand-back did not confirm for splits [s00]; they are handed back again later, or taken once this worker's session ends")
		if !fault.Fired() {
			t.Fatal("the hand-back write was not dropped")
		}
		w1.surrender("s00")
		f.Until("s00 is claimed again", func() bool { return len(f.Holders("s00")) == 1 })
		h, _ := w1.Tenancy("s00")
		if h.Epoch <= epoch {
			t.Fatalf("re-claimed at epoch %d, want above %d", h.Epoch, epoch)
		}
		if v, _ := f.Record("s00"); v.Attempts != 0 {
			t.Fatalf("record %s, want no attempt charged (the record still names w1's live session: a leftover, re-claimed free)", v)
		}
		if w1.Losses() != 0 {
			t.Fatalf("w1 emitted Lost after a voluntary release")
		}
	})
}

// §13.5: a dropped plan publish heals through the recount of the next run.
func TestFleetDroppedPlanPublishHealsViaRecount(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		_, p := newJob(3)
		// Drop the first plan write that publishes a non-zero planned count;
		// the generation fence writes planned 0 and is not dropped.
		var fault *Fault
		f.ArmNextStart(func(fs *FaultStore) {
			fault = fs.DropNextWrite(Match{Prefix: protocol.KeyPlan, Ops: OpUpdate, Value: func(b []byte) bool {
				fields, ok := jsonFields(b)
				return ok && string(fields["planned"]) != "0"
			}})
		})
		w1 := f.Start("w1", p)
		w1.Policy.Work = WorkComplete
		f.Until("the verdict", f.AllSettled)
		if !fault.Fired() {
			t.Fatal("the plan publish was not dropped")
		}
		plan, _ := f.Plan()
		if plan.Planned != 3 || plan.Finality != coordination.PlanFinal {
			t.Fatalf("plan %+v, want planned 3, final", plan)
		}
		if _, ok := w1.Verdict().(coordination.AllComplete); !ok {
			t.Fatalf("verdict %#v", w1.Verdict())
		}
	})
}

// §11.6, §17.4, Appendix A.2: a store outage longer than a lease
// self-fences every split; the worker recovers when the store returns.
func TestFleetStoreOutageSelfFencesAndRecovers(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(3)
		w1 := f.Start("w1", p)
		w1.Policy.Work = WorkCommit
		f.Until("w1 holds every split", func() bool { return allHeld(f, splits, "w1") })
		before := w1.Held()
		f.Partition("w1")
		wantKind(t, "commit during the outage", w1.Coordinator().Commit("s00", coordination.SplitProgress{Watermark: 50}), coordination.Retryable)
		took := f.Until("every split self-fences", func() bool { return len(w1.HeldIDs()) == 0 })
		if took > 3*lease/2 || took < lease/2 {
			t.Fatalf("self-fence after %v of outage, want between 1.0 and 1.4 leases after the last renewal", took)
		}
		if n := len(lostSplits(w1)); n != 3 {
			t.Fatalf("w1 emitted Lost for %d splits, want 3", n)
		}
		if w1.Err() != nil {
			t.Fatalf("an outage ended the coordinator: %v", w1.Err())
		}
		f.Heal("w1")
		f.Until("w1 re-claims every split", func() bool { return allHeld(f, splits, "w1") })
		for s, old := range before {
			if h, _ := w1.Tenancy(s); h.Epoch <= old.Epoch {
				t.Fatalf("split %s re-claimed at epoch %d, want above %d", s, h.Epoch, old.Epoch)
			}
		}
	})
}

// §11.3, Appendix A.2: while watches are being re-established, renewals,
// self-fencing and commits keep running, so a watch outage longer than a
// lease loses nothing.
func TestFleetWatchOutageKeepsLeases(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(2)
		w1 := f.Start("w1", p)
		f.Until("w1 holds every split", func() bool { return allHeld(f, splits, "w1") })
		before := w1.Held()
		w1.Store().BlockWatches()
		f.Advance(3 * lease)
		for s, old := range before {
			h, ok := w1.Tenancy(s)
			if !ok || h.Epoch != old.Epoch {
				t.Fatalf("split %s lost during a watch outage (held %t, epoch %d, was %d)", s, ok, h.Epoch, old.Epoch)
			}
			if err := w1.Commit(s, coordination.SplitProgress{Watermark: 7}); err != nil {
				t.Fatalf("commit during a watch outage: %v", err)
			}
		}
		if w1.Losses() != 0 || w1.Err() != nil {
			t.Fatalf("losses %d, err %v during a watch outage, want none", w1.Losses(), w1.Err())
		}
		w1.Store().UnblockWatches()
		w1.Policy.Work = WorkComplete
		f.Until("the verdict after the watches return", f.AllSettled)
	})
}

// §6.1, §6.5: Poll never blocks while the store hangs, and every other call
// returns within its bound.
func TestFleetPollNeverBlocksWhileStoreHangs(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		p := NewTestPlanner(jobFP, Splits(1)...)
		w1 := f.Start("w1", p)
		f.Until("w1 holds s00", func() bool { return w1.Holds("s00") })
		w1.Store().Hang()
		for range 5 {
			start := time.Now()
			if _, err := w1.Coordinator().Poll(); err != nil {
				t.Fatalf("Poll: %v", err)
			}
			if d := time.Since(start); d != 0 {
				t.Fatalf("Poll took %v of bubble time while the store hangs, want none", d)
			}
			f.Advance(f.Step())
		}
		cfg := w1.Config()
		start := time.Now()
		err := w1.Coordinator().Commit("s00", coordination.SplitProgress{Watermark: 1})
		wantKind(t, "commit while the store hangs", err, coordination.Retryable)
		if d, bound := time.Since(start), 3*cfg.OpTimeout+100*time.Millisecond; d > bound {
			t.Fatalf("commit returned after %v, want within %v", d, bound)
		}
		start = time.Now()
		errs := w1.Coordinator().CommitFinal([]coordination.Commit{{Split: "s00", Progress: coordination.SplitProgress{Watermark: 1}}})
		if d, bound := time.Since(start), cfg.OpTimeout+100*time.Millisecond; d > bound || len(errs) != 1 || coordination.KindOf(errs[0]) != coordination.Retryable {
			t.Fatalf("CommitFinal returned %v after %v, want one Retryable within %v", errs, d, bound)
		}
		w1.Store().Unhang()
		f.Advance(lease)
	})
}

// §5.4, Appendix A.30: a panic inside an actor surfaces as Fatal from Poll
// and never crashes the process.
func TestFleetActorPanicIsFatal(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		p := NewTestPlanner(jobFP, Splits(1)...)
		w1 := f.Start("w1", p)
		w1.Policy.ExpectFatal = true
		f.Until("w1 holds s00", func() bool { return w1.Holds("s00") })
		fault := w1.Store().PanicNextWrite(Match{Keyspace: store.Ephemeral, Prefix: protocol.WorkerKey("w1")})
		f.Until("the coordinator fails", func() bool { return w1.Err() != nil })
		if !fault.Fired() {
			t.Fatal("the panic was not injected")
		}
		wantKind(t, "Poll after an actor panic", w1.Err(), coordination.Fatal)
		if !strings.Contains(w1.Err().Error(), "internal error: injected panic") {
			t.Fatalf("err = %v, want internal error: injected panic", w1.Err())
		}
	})
}
