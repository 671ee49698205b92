package coordctl

import (
	"slices"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

const auditFP = "audit-test:v1"

// history builds a durable history in revision order: the plan first, then
// the given records, each at the next revision.
type history struct {
	evs []store.WatchEvent
	rev store.Revision
}

func newHistory() *history {
	h := &history{}
	h.put(protocol.KeyPlan, protocol.EncodePlan(protocol.NewPlan(auditFP, 0)))
	return h
}

func (h *history) put(key string, value []byte) *history {
	h.rev++
	h.evs = append(h.evs, store.WatchEvent{Kind: store.Put, Entry: store.Entry{Key: key, Value: value, Revision: h.rev}})
	return h
}

func (h *history) del(key string) *history {
	h.rev++
	h.evs = append(h.evs, store.WatchEvent{Kind: store.Delete, Entry: store.Entry{Key: key, Revision: h.rev}})
	return h
}

func (h *history) split(r protocol.SplitRecord) *history {
	return h.put(protocol.SplitKey(r.ID), protocol.EncodeSplit(r))
}

func (h *history) progress(r protocol.ProgressRecord) *history {
	return h.put(protocol.ProgressKey(r.ID), protocol.EncodeProgress(r))
}

// rules audits the history and returns the rules violated, in order.
func (h *history) rules() []string {
	a := newAuditor()
	for _, ev := range h.evs {
		a.add(ev)
	}
	var out []string
	for _, v := range a.report("j").Violations {
		out = append(out, v.Rule)
	}
	return out
}

func TestAuditorRules(t *testing.T) {
	fp := protocol.Fingerprint(auditFP)
	fresh := protocol.SeedSplit("s", fp, 5, nil, 0)
	claim1 := fresh.Claim("a", "n1", 1, false, 0)
	claim2 := claim1.HandBack(0).Claim("b", "n2", 2, false, 0)
	fence1 := protocol.FreshProgress("s", fp, "a", 1, 0)
	commit1 := fence1.Commit(wm(10), 0)
	fence2 := commit1.Fence("b", 2, 0)
	done2 := fence2.Commit(wmDone(20), 0)
	quarantined := claim1.Fail(1, 0)
	tests := []struct {
		name string
		h    *history
		want []string
	}{
		{"a normal move", newHistory().split(fresh).split(claim1).progress(fence1).progress(commit1).split(claim2).progress(fence2).progress(done2).split(claim2.Complete(0)), nil},
		{"a commit of the old tenancy before the new fence is fine", newHistory().split(claim1).progress(fence1).split(claim2).progress(commit1).progress(fence2), nil},
		{"a requeue", newHistory().split(claim1).split(quarantined).split(requeued(quarantined, 0)), nil},
		{"stale write after the fence", newHistory().split(claim1).progress(fence1).split(claim2).progress(fence2).progress(commit1), []string{ruleStaleWrite}},
		{"watermark regressed", newHistory().split(claim1).progress(commit1).progress(fence1.Commit(wm(5), 0)), []string{ruleWatermark}},
		{"completed progress written again", newHistory().split(claim2).progress(done2).progress(done2.Commit(wmDone(20), 1)), []string{ruleTerminal}},
		{"completed split written again", newHistory().split(claim2.Complete(0)).split(claim2), []string{ruleTerminal}},
		{"quarantined split claimed", newHistory().split(quarantined).split(quarantined.Claim("c", "n3", quarantined.Epoch+1, false, 0)), []string{ruleTerminal}},
		{"two owners at one epoch", newHistory().split(claim1).split(fresh.Claim("b", "n2", 1, false, 0)), []string{ruleEpochOwners}},
		{"split epoch decreased", newHistory().split(claim2).split(claim1), []string{ruleSplitEpoch}},
		{"attempts decreased", newHistory().split(claim1.Claim("a", "n1", 2, true, 0)).split(claim1.Claim("a", "n1", 3, false, 0)), []string{ruleAttempts}},
		{"fence by another than the claimant", newHistory().split(claim1).progress(protocol.FreshProgress("s", fp, "b", 1, 0)), []string{ruleFenceOwner}},
		{"fence before the claim", newHistory().split(fresh).progress(fence1), []string{ruleFenceUnclaimed}},
		{"record deleted", newHistory().split(claim1).del(protocol.SplitKey("s")), []string{ruleDeleted}},
		{"unreadable record", newHistory().put(protocol.SplitKey("s"), []byte("{}")), []string{ruleUnreadable}},
		{"foreign fingerprint", newHistory().put(protocol.SplitKey("s"), protocol.EncodeSplit(protocol.SeedSplit("s", fp+1, 5, nil, 0))), []string{ruleUnreadable}},
		{"records before a plan are checked once it arrives", (&history{}).split(claim2).put(protocol.KeyPlan, protocol.EncodePlan(protocol.NewPlan(auditFP, 0))).split(claim1), []string{ruleSplitEpoch}},
		{"no plan at all", (&history{}).split(claim1), []string{ruleUnreadable}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.h.rules(); !slices.Equal(got, tt.want) {
				t.Fatalf("violations = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestAuditorSpotsTruncatedHistory checks that a split whose kept history
// starts after its first write is counted, and one seen from its seed is not.
func TestAuditorSpotsTruncatedHistory(t *testing.T) {
	fp := protocol.Fingerprint(auditFP)
	seed := protocol.SeedSplit("s", fp, 5, nil, 0)
	claimed := seed.Claim("a", "n", 1, false, 0)
	committed := protocol.FreshProgress("t", fp, "a", 1, 0).Commit(wm(3), 0)
	a := newAuditor()
	for _, ev := range newHistory().split(seed).split(claimed).progress(protocol.FreshProgress("s", fp, "a", 1, 0)).
		split(protocol.SeedSplit("t", fp, 5, nil, 0).Claim("a", "n", 1, false, 0)).progress(committed).evs {
		a.add(ev)
	}
	if r := a.report("j"); r.Truncated != 1 || len(r.Violations) != 0 {
		t.Fatalf("report = %+v, want split t (first kept revisions: a claim, a commit) counted as truncated and no violation", r)
	}
}

func TestViolationNamesTheRevisions(t *testing.T) {
	v := violation{Rule: ruleStaleWrite, Key: "progress.s", Rev: 9, PrevRev: 7, Detail: "d"}
	if got, want := v.String(), "VIOLATION stale-write progress.s (revs 7 -> 9): d"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	v.PrevRev = 0
	if got, want := v.String(), "VIOLATION stale-write progress.s (rev 9): d"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

func wm(w int64) coordination.SplitProgress { return coordination.SplitProgress{Watermark: w} }

func wmDone(w int64) coordination.SplitProgress {
	return coordination.SplitProgress{Watermark: w, Completed: true}
}

func TestAuditorRuntimeSplitRules(t *testing.T) {
	fp := protocol.Fingerprint(auditFP)
	fresh := protocol.SeedSplit("s", fp, 100, nil, 0)
	claim1 := fresh.Claim("a", "n1", 1, false, 0)
	fence1 := protocol.FreshProgress("s", fp, "a", 1, 0)
	c1, _ := fence1.NextCut([]byte("50-100"), 50)
	cut1 := fence1.CommitCut(wm(10), []byte("0-50"), c1, 0)
	residual1 := c1.ResidualSplit("s", fp, 0)
	c2, _ := cut1.NextCut([]byte("30-50"), 20)
	cut2 := cut1.CommitCut(wm(20), []byte("0-30"), c2, 0)
	residual2 := c2.ResidualSplit("s", fp, 0)
	done := cut2.Commit(wmDone(30), 0)
	other := c1
	other.Weight, other.Descriptor = 49, []byte("51-100")
	rewritten := fence1.CommitCut(wm(12), []byte("0-51"), other, 0)
	tests := []struct {
		name string
		h    *history
		want []string
	}{
		{"two cuts, each residual created after its cut, then completed", newHistory().split(fresh).split(claim1).progress(fence1).progress(cut1).split(residual1).
			progress(cut1.Commit(wm(15), 0)).progress(cut2).split(residual2).progress(done), nil},
		{"a residual before its cut", newHistory().split(fresh).split(claim1).progress(fence1).split(residual1).progress(cut1), []string{ruleResidualUncut}},
		{"a commit dropped the cut", newHistory().split(fresh).split(claim1).progress(fence1).progress(cut1).split(residual1).progress(fence1.Commit(wm(15), 0)), []string{ruleCutDropped}},
		{"one cut recorded with another residual", newHistory().split(fresh).split(claim1).progress(fence1).progress(cut1).progress(rewritten), []string{ruleCutRewritten}},
		{"a cut replaced before its residual existed", newHistory().split(fresh).split(claim1).progress(fence1).progress(cut1).progress(cut2), []string{ruleCutUnconfirmed}},
		{"completed before the residual existed", newHistory().split(fresh).split(claim1).progress(fence1).progress(cut1).progress(cut1.Commit(wmDone(50), 0)), []string{ruleCompletedBefore}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.h.rules(); !slices.Equal(got, tt.want) {
				t.Fatalf("violations = %v, want %v", got, tt.want)
			}
		})
	}
}
