package testkit

import (
	"context"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// Rebalancing scenarios of issue #5 and SPEC §15, §20, on fleets in synctest
// bubbles.

// soloThenJoin starts w1 alone holding every split (committing once per
// tenancy), applies w1's revoke policy, then starts w2.
func soloThenJoin(f *Fleet, n int, revoke Revoke, muts ...func(*coordination.Config)) (w1, w2 *Member, splits []coordination.SplitID) {
	splits, p := newJob(n)
	w1 = f.Start("w1", p, muts...)
	w1.Policy = Policy{Work: WorkCommit, Revoke: revoke}
	f.Until("w1 holds and committed every split", func() bool {
		if !allHeld(f, splits, "w1") {
			return false
		}
		for _, h := range w1.Held() {
			if h.Committed == nil {
				return false
			}
		}
		return true
	})
	w2 = f.Start("w2", p, muts...)
	w2.Policy.Work = WorkCommit
	return w1, w2, splits
}

// §20.1, §20.2 drained, §2 G4: a newcomer receives its share by weight
// through cooperative drains, and every split it gains carries exactly the
// drained cut.
func TestRebalanceNewcomerGetsDrainedShareWithZeroReplay(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		w1, w2, splits := soloThenJoin(f, 6, RevokeConsent)
		f.Until("w2 holds half", func() bool { return allHeld(f, splits, "") && len(w2.HeldIDs()) == 3 })
		for _, s := range w2.HeldIDs() {
			h, _ := w2.Tenancy(s)
			cut, ok := w1.LastCommitted(s)
			if !ok || h.Carried == nil || !sameProgress(h.Carried, &cut) {
				t.Fatalf("split %s: w2 gained %s, want w1's drained cut %v", s, progressString(h.Carried), cut)
			}
			if v, _ := f.Record(s); v.Attempts != 0 {
				t.Fatalf("split %s: %s, want no attempt charged for a drain", s, v)
			}
		}
		if w1.Losses() != 0 {
			t.Fatalf("w1 emitted %d Lost events for cooperative drains, want none", w1.Losses())
		}
		if n := len(w1.RevokeRequests()); n != 3 {
			t.Fatalf("w1 got %d revoke requests %v, want 3 (w1 holds %v, w2 holds %v)", n, w1.RevokeRequests(), w1.HeldIDs(), w2.HeldIDs())
		}
		checkRevocationAccounting(t, f)
	})
}

// §14, §20: the newcomer's share is by weight, not by count.
func TestRebalanceNewcomerShareIsByWeight(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		ps := Splits(4, 3, 1, 1, 1) // total weight 6
		p := NewTestPlanner(jobFP, ps...)
		w1 := f.Start("w1", p)
		w1.Policy.Work = WorkCommit
		f.Until("w1 holds every split", func() bool { return allHeld(f, ids(ps), "w1") })
		w2 := f.Start("w2", p)
		load := func(m *Member) uint64 {
			n := uint64(0)
			for _, h := range m.Held() {
				n += h.Spec.Weight
			}
			return n
		}
		f.Until("both carry weight 3", func() bool {
			return allHeld(f, ids(ps), "") && load(w1) == 3 && load(w2) == 3
		})
		checkRevocationAccounting(t, f)
	})
}

// §20.2 forced by deadline: a drain that never completes is forced at
// DrainDeadline and the new owner resumes at the last committed watermark.
func TestRebalanceUnfinishedDrainIsForcedAtDeadline(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		w1, w2, splits := soloThenJoin(f, 4, RevokeIgnore)
		f.Until("w1 is asked to give up two splits", func() bool { return len(w1.RevokeRequests()) == 2 })
		asked := f.Now()
		revoked := w1.RevokeRequests()
		deadline := w1.Config().DrainDeadline
		f.Advance(deadline - f.Step())
		if n := w1.Metric("splits_draining"); n != 2 {
			t.Fatalf("splits_draining = %v during two drains, want 2", n)
		}
		for _, s := range revoked {
			if !w1.Holds(s) {
				t.Fatalf("split %s forced %v after the request, before the drain deadline %v", s, f.Now().Sub(asked), deadline)
			}
		}
		f.Until("w2 holds its share", func() bool { return allHeld(f, splits, "") && len(w2.HeldIDs()) == 2 })
		if n := w1.Metric("revocations_total", "outcome", "forced"); n != 2 {
			t.Fatalf("forced revocations = %v, want 2", n)
		}
		for _, s := range revoked {
			if lostSplits(w1)[s] != 1 {
				t.Fatalf("split %s: w1 Lost events %d, want exactly one for a forced revocation", s, lostSplits(w1)[s])
			}
			h, _ := w2.Tenancy(s)
			cut, _ := w1.LastCommitted(s)
			if !sameProgress(h.Carried, &cut) {
				t.Fatalf("split %s: w2 resumed at %s, want the last committed %v", s, progressString(h.Carried), cut)
			}
		}
		checkRevocationAccounting(t, f)
	})
}

// §6.11, §20.2 forced by decline: a decline forces the revocation at once.
func TestRebalanceDeclineForcesAtOnce(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		w1, w2, splits := soloThenJoin(f, 4, RevokeDecline, setDrainDeadline(20*lease))
		f.Until("w1 is asked to give up two splits", func() bool { return len(w1.RevokeRequests()) == 2 })
		took := f.Until("w2 holds its share", func() bool { return allHeld(f, splits, "") && len(w2.HeldIDs()) == 2 })
		if took >= lease {
			t.Fatalf("declined revocations moved after %v, want at once (well under a lease)", took)
		}
		for _, s := range w1.RevokeRequests() {
			if lostSplits(w1)[s] != 1 {
				t.Fatalf("split %s: want exactly one Lost after the decline", s)
			}
		}
		checkRevocationAccounting(t, f)
	})
}

// §20, §14: a worker joining while revocations are in flight still lets the
// fleet converge to a balanced assignment.
func TestRebalanceJoinDuringRevocationConverges(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		w1, w2, splits := soloThenJoin(f, 6, RevokeIgnore)
		f.Until("w1 is asked to give splits up", func() bool { return len(w1.RevokeRequests()) > 0 })
		w1.Policy.Revoke = RevokeConsent
		w3 := f.Start("w3", NewTestPlanner(jobFP, Splits(6)...))
		f.Until("three workers hold two each", func() bool {
			return allHeld(f, splits, "") && len(w1.HeldIDs()) == 2 && len(w2.HeldIDs()) == 2 && len(w3.HeldIDs()) == 2
		})
		checkRevocationAccounting(t, f)
	})
}

// cancelSetup: w1 holds four splits, w2 joins and w1 is asked to give two
// up; w2 then crashes, so the leader (w1) names them for w1 again while the
// revocations are live (a cancellation, §20.3).
func cancelSetup(f *Fleet, work Work) (w1 *Member, revoked []coordination.SplitID) {
	w1, _, _ = soloThenJoin(f, 4, RevokeIgnore, setDrainDeadline(6*lease))
	w1.Policy.Work = work
	f.Until("w1 is asked to give up two splits", func() bool { return len(w1.RevokeRequests()) == 2 })
	revoked = w1.RevokeRequests()
	if f.Leader() != "w1" {
		f.Fail("testkit: w1 is not the leader")
	}
	f.Crash("w2")
	return w1, revoked
}

// §20.3: a cancelled revocation whose source keeps committing keeps the
// split and never yields Lost.
func TestRebalanceCancelledRevocationNeverLost(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		w1, revoked := cancelSetup(f, WorkStream)
		f.Advance(3 * w1.Config().DrainDeadline)
		for _, s := range revoked {
			if !w1.Holds(s) || lostSplits(w1)[s] != 0 {
				t.Fatalf("split %s after a cancelled revocation: held %t, Lost %d; want held and never lost", s, w1.Holds(s), lostSplits(w1)[s])
			}
		}
		if n := len(w1.RevokeRequests()); n != 2 {
			t.Fatalf("revoke requests %v, want exactly the two cancelled ones", w1.RevokeRequests())
		}
		checkRevocationAccounting(t, f)
	})
}

// §20.3 cancelled then silent, §19.1: a cancelled drain that commits nothing
// for DrainDeadline is released and re-gained by the same worker with no
// attempt charged.
func TestRebalanceCancelledSilentDrainIsReleasedAndRegained(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		w1, revoked := cancelSetup(f, WorkHold)
		f.Until("w1 re-gains the silent splits", func() bool {
			for _, s := range revoked {
				if lostSplits(w1)[s] != 1 || !w1.Holds(s) {
					return false
				}
			}
			return true
		})
		for _, s := range revoked {
			if v, _ := f.Record(s); v.Attempts != 0 || v.Owner != "w1" {
				t.Fatalf("split %s: %s, want re-gained by w1 with no attempt charged", s, v)
			}
		}
		checkRevocationAccounting(t, f)
	})
}

// §15.3, Appendix A.19: RebalanceDelay 0 moves a crashed worker's splits
// within three leases.
func TestRebalanceZeroDelayMovesCrashedSplitsWithinThreeLeases(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(4)
		f.Start("w1", p)
		w2 := f.Start("w2", p)
		f.Until("both hold two", func() bool { return allHeld(f, splits, "") && len(w2.HeldIDs()) == 2 })
		f.Crash("w2")
		took := f.Until("w1 holds every split", func() bool { return allHeld(f, splits, "w1") })
		if took > 3*lease {
			t.Fatalf("the crashed worker's splits moved after %v, want within three leases (%v)", took, 3*lease)
		}
		checkRevocationAccounting(t, f)
	})
}

// §15.3: a rebalance delay of five leases withholds a crashed worker's
// splits for at least three leases, then moves them.
func TestRebalanceFiveLeaseDelayWithholdsAtLeastThree(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(4)
		delay := func(c *coordination.Config) { c.RebalanceDelay = 5 * lease }
		f.Start("w1", p, delay)
		w2 := f.Start("w2", p, delay)
		f.Until("both hold two", func() bool { return allHeld(f, splits, "") && len(w2.HeldIDs()) == 2 })
		crashed := w2.HeldIDs()
		f.Crash("w2")
		f.Advance(3 * lease)
		for _, s := range crashed {
			if len(f.Holders(s)) != 0 {
				t.Fatalf("split %s moved within three leases of the crash despite a five-lease delay", s)
			}
		}
		took := f.Until("w1 holds every split", func() bool { return allHeld(f, splits, "w1") })
		// Presence expiry (at most one lease after the last renewal), the
		// window, one heartbeat to republish, and the claim.
		if total := 3*lease + took; total > 5*lease+2*lease {
			t.Fatalf("the withheld splits moved %v after the crash, want within the delay plus two leases", total)
		}
		checkRevocationAccounting(t, f)
	}, WithUntilBudget(20*lease))
}

// §15.3: a crashed worker that returns inside its rebalance window cancels
// the window at once and gets its splits back.
func TestRebalanceReturnCancelsDelayWindow(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(4)
		delay := func(c *coordination.Config) { c.RebalanceDelay = 10 * lease }
		w1 := f.Start("w1", p, delay)
		w2 := f.Start("w2", p, delay)
		f.Until("both hold two", func() bool { return allHeld(f, splits, "") && len(w2.HeldIDs()) == 2 })
		crashed := w2.HeldIDs()
		f.Crash("w2")
		f.Advance(3 * lease) // presence expired: the window is open
		w2 = f.Start("w2", p, delay)
		took := f.Until("w2 gets its splits back", func() bool { return allHeld(f, crashed, "w2") })
		if took >= 2*lease {
			t.Fatalf("the returning worker waited %v, want its window cancelled at once", took)
		}
		if len(w1.HeldIDs()) != 2 {
			t.Fatalf("w1 holds %v, want its own two", w1.HeldIDs())
		}
		checkRevocationAccounting(t, f)
	}, WithUntilBudget(20*lease))
}

// §16.1, Appendix A.18: a withdrawn (deleted) assignment record releases
// nothing.
func TestRebalanceWithdrawnAssignmentReleasesNothing(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(4)
		w1 := f.Start("w1", p)
		w2 := f.Start("w2", p)
		f.Until("both hold two", func() bool { return allHeld(f, splits, "") && len(w2.HeldIDs()) == 2 })
		follower := w2
		if f.Leader() == "w2" {
			follower = w1
		}
		held := follower.HeldIDs()
		ok, err := f.Store().Delete(context.Background(), store.Durable, protocol.AssignKey(follower.ID()), 0)
		if !ok || err != nil {
			t.Fatalf("delete the assignment: %v %v", ok, err)
		}
		f.Advance(2 * lease)
		if len(follower.RevokeRequests()) != 0 || follower.Losses() != 0 {
			t.Fatalf("a withdrawn assignment revoked %v and lost %d splits, want nothing", follower.RevokeRequests(), follower.Losses())
		}
		for _, s := range held {
			if !follower.Holds(s) {
				t.Fatalf("split %s released after its assignment record was withdrawn", s)
			}
		}
		checkRevocationAccounting(t, f)
	})
}
