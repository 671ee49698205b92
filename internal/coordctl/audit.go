package coordctl

import (
	"fmt"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// Audit rules: the invariants of docs/protocol.md ("Invariants") that a
// history of the job's durable records can violate.
const (
	ruleSplitEpoch      = "split-epoch-decreased" // a split record's epoch went down
	ruleAttempts        = "attempts-decreased"    // attempts went down other than by a requeue
	ruleEpochOwners     = "epoch-owner-conflict"  // two owners named at one split epoch
	ruleStaleWrite      = "stale-write"           // a progress write under a superseded epoch landed
	ruleWatermark       = "watermark-decreased"   // committed progress regressed
	ruleTerminal        = "terminal-reverted"     // a completed or quarantined record changed
	ruleFenceOwner      = "fence-owner-mismatch"  // progress fenced at epoch e by another than e's claimant
	ruleFenceUnclaimed  = "fence-before-claim"    // progress fenced at an epoch no claim reached yet
	ruleDeleted         = "record-deleted"        // a plan, spec, split or progress record was deleted
	ruleUnreadable      = "record-unreadable"     // a record the codecs reject
	rulePlanFingerprint = "fingerprint-changed"   // the plan record changed its fingerprint

	// docs/protocol.md, "Runtime split".
	ruleResidualUncut   = "residual-before-cut"       // a residual's split record before its parent's cut was durable
	ruleCutDropped      = "cut-dropped"               // a progress write lost the cut or primary the record carried
	ruleCutRewritten    = "cut-rewritten"             // one cut recorded twice with different residuals
	ruleCutUnconfirmed  = "cut-replaced-unconfirmed"  // a cut replaced before its residual existed
	ruleCompletedBefore = "completed-before-residual" // a parent completed before its latest cut's residual existed
)

// violation is one broken invariant, with the revisions involved (PrevRev
// 0 when only one revision is involved).
type violation struct {
	Rule    string `json:"rule"`
	Key     string `json:"key"`
	Rev     uint64 `json:"rev"`
	PrevRev uint64 `json:"prev_rev"`
	Detail  string `json:"detail"`
}

// String renders v on one line.
func (v violation) String() string {
	revs := fmt.Sprintf("rev %d", v.Rev)
	if v.PrevRev != 0 {
		revs = fmt.Sprintf("revs %d -> %d", v.PrevRev, v.Rev)
	}
	return fmt.Sprintf("VIOLATION %s %s (%s): %s", v.Rule, v.Key, revs, v.Detail)
}

// auditor checks a job's durable history, fed in revision order (a bucket's
// revisions order writes across keys). Before the plan record arrives it
// cannot decode split or progress records (they are checked against the
// job's fingerprint), so it holds them back until then.
type auditor struct {
	fp       uint64
	planFP   string
	pending  []store.WatchEvent
	perKey   map[string]int
	events   int
	requeues int
	splits   map[coordination.SplitID]*splitTrack
	// truncated holds the splits whose kept history starts after their
	// first write: the bucket's history depth dropped older revisions.
	truncated map[coordination.SplitID]bool
	found     []violation
	// onViolation, when set, is called with each violation as it is found.
	onViolation func(violation)
}

// splitTrack is the last revision of a split's two records and the owner
// each split epoch named.
type splitTrack struct {
	split       *protocol.SplitRecord
	splitRev    uint64
	progress    *protocol.ProgressRecord
	progressRev uint64
	claims      map[uint64]string
	cuts        map[coordination.SplitID]bool // residual ids the split's progress history recorded
}

func newAuditor() *auditor {
	return &auditor{perKey: map[string]int{}, splits: map[coordination.SplitID]*splitTrack{}, truncated: map[coordination.SplitID]bool{}}
}

// add checks one event of the history; SnapshotDone is ignored.
func (a *auditor) add(ev store.WatchEvent) {
	if ev.Kind == store.SnapshotDone {
		return
	}
	a.events++
	a.perKey[ev.Entry.Key]++
	kind, _ := protocol.ParseKey(store.Durable, ev.Entry.Key)
	if kind == protocol.KeyPlanRecord {
		a.plan(ev)
		return
	}
	if a.planFP == "" && (kind == protocol.KeySplitRecord || kind == protocol.KeyProgress) {
		a.pending = append(a.pending, ev)
		return
	}
	a.record(kind, ev)
}

// plan checks a plan record revision and releases the held-back events once
// the fingerprint is known.
func (a *auditor) plan(ev store.WatchEvent) {
	rev := uint64(ev.Entry.Revision)
	if ev.Kind == store.Delete {
		a.violate(ruleDeleted, ev.Entry.Key, rev, 0, "the plan record was deleted outside the library")
		return
	}
	p, err := protocol.DecodePlan(ev.Entry.Key, ev.Entry.Value)
	if err != nil {
		a.violate(ruleUnreadable, ev.Entry.Key, rev, 0, err.Error())
		return
	}
	if a.planFP != "" && p.Fingerprint != a.planFP {
		a.violate(rulePlanFingerprint, ev.Entry.Key, rev, 0, fmt.Sprintf("fingerprint %q replaced %q; a job's identity never changes", p.Fingerprint, a.planFP))
		return
	}
	if a.planFP == "" {
		a.planFP, a.fp = p.Fingerprint, protocol.Fingerprint(p.Fingerprint)
		held := a.pending
		a.pending = nil
		for _, e := range held {
			kind, _ := protocol.ParseKey(store.Durable, e.Entry.Key)
			a.record(kind, e)
		}
	}
}

// record checks a split, progress or spec record revision.
func (a *auditor) record(kind protocol.KeyKind, ev store.WatchEvent) {
	key, rev := ev.Entry.Key, uint64(ev.Entry.Revision)
	switch kind {
	case protocol.KeySpecRecord:
		if ev.Kind == store.Delete {
			a.violate(ruleDeleted, key, rev, 0, "a spec record was deleted outside the library")
		}
	case protocol.KeySplitRecord:
		if ev.Kind == store.Delete {
			a.violate(ruleDeleted, key, rev, 0, "a split record was deleted outside the library")
			return
		}
		r, err := protocol.DecodeSplit(key, ev.Entry.Value, a.fp)
		if err != nil {
			a.violate(ruleUnreadable, key, rev, 0, err.Error())
			return
		}
		a.splitVersion(key, rev, r)
	case protocol.KeyProgress:
		if ev.Kind == store.Delete {
			a.violate(ruleDeleted, key, rev, 0, "a progress record was deleted outside the library")
			return
		}
		r, err := protocol.DecodeProgress(key, ev.Entry.Value, a.fp)
		if err != nil {
			a.violate(ruleUnreadable, key, rev, 0, err.Error())
			return
		}
		a.progressVersion(key, rev, r)
	}
}

// track returns the split's track, creating it.
func (a *auditor) track(id coordination.SplitID) *splitTrack {
	t, ok := a.splits[id]
	if !ok {
		t = &splitTrack{claims: map[uint64]string{}, cuts: map[coordination.SplitID]bool{}}
		a.splits[id] = t
	}
	return t
}

// splitVersion checks split record revision r against the previous one.
func (a *auditor) splitVersion(key string, rev uint64, r protocol.SplitRecord) {
	t := a.track(r.ID)
	if t.split == nil && r.Epoch > 0 {
		a.truncated[r.ID] = true // a split record is created at epoch 0
	}
	if t.split == nil && r.Parent != "" && !a.truncated[r.Parent] && !a.track(r.Parent).cuts[r.ID] {
		a.violate(ruleResidualUncut, key, rev, 0, fmt.Sprintf("the residual of %s appeared before any progress write of %s recorded its cut; a residual exists only after its parent's narrowing is durable", r.Parent, r.Parent))
	}
	if p := t.split; p != nil {
		requeue := isRequeue(*p, r)
		switch {
		case requeue:
			a.requeues++
		case p.Status.Terminal():
			a.violate(ruleTerminal, key, rev, t.splitRev, fmt.Sprintf("the split record was %s and was written again (now %s, epoch %d, owner %s); terminal records never change", p.Status, r.Status, r.Epoch, orNone(r.Owner)))
		}
		if r.Epoch < p.Epoch {
			a.violate(ruleSplitEpoch, key, rev, t.splitRev, fmt.Sprintf("epoch went from %d down to %d", p.Epoch, r.Epoch))
		}
		if r.Attempts < p.Attempts && !requeue {
			a.violate(ruleAttempts, key, rev, t.splitRev, fmt.Sprintf("attempts went from %d down to %d without a requeue", p.Attempts, r.Attempts))
		}
	}
	if r.Owner != "" {
		if o, ok := t.claims[r.Epoch]; ok && o != r.Owner {
			a.violate(ruleEpochOwners, key, rev, t.splitRev, fmt.Sprintf("epoch %d names owner %s, but %s claimed it; every claim raises the epoch", r.Epoch, r.Owner, o))
		}
		t.claims[r.Epoch] = r.Owner
	}
	t.split, t.splitRev = &r, rev
}

// progressVersion checks progress record revision r against the previous
// one and against the split record's claims.
func (a *auditor) progressVersion(key string, rev uint64, r protocol.ProgressRecord) {
	t := a.track(r.ID)
	if t.progress == nil && r.Epoch > 0 && r.Watermark != nil {
		a.truncated[r.ID] = true // a progress record is created by a seed (epoch 0) or a fence (no watermark)
	}
	if r.Cut != nil {
		t.cuts[r.Cut.ID] = true
	}
	if p := t.progress; p != nil {
		a.cutVersion(key, rev, t, *p, r)
		if p.Completed {
			a.violate(ruleTerminal, key, rev, t.progressRev, fmt.Sprintf("the progress record was completed and was written again (epoch %d, owner %s); a completed progress record is final", r.Epoch, orNone(r.Owner)))
		}
		if r.Epoch < p.Epoch {
			a.violate(ruleStaleWrite, key, rev, t.progressRev, fmt.Sprintf("a write under epoch %d (owner %s) landed after epoch %d fenced it", r.Epoch, orNone(r.Owner), p.Epoch))
		}
		if p.Watermark != nil && (r.Watermark == nil || *r.Watermark < *p.Watermark) {
			a.violate(ruleWatermark, key, rev, t.progressRev, fmt.Sprintf("watermark went from %d to %s; committed progress never regresses", *p.Watermark, watermarkText(r.Watermark)))
		}
	}
	if r.Epoch > 0 {
		if o, ok := t.claims[r.Epoch]; ok && o != r.Owner {
			a.violate(ruleFenceOwner, key, rev, t.splitRev, fmt.Sprintf("written for epoch %d by %s, but the split record gave epoch %d to %s", r.Epoch, orNone(r.Owner), r.Epoch, o))
		}
		if t.split != nil && t.split.Epoch < r.Epoch {
			a.violate(ruleFenceUnclaimed, key, rev, t.splitRev, fmt.Sprintf("written at epoch %d while the split record was at epoch %d; the claim comes before the fence", r.Epoch, t.split.Epoch))
		}
	}
	t.progress, t.progressRev = &r, rev
}

// cutVersion checks the runtime-split fields of progress revision r of a
// split against its previous revision p (docs/protocol.md, "Runtime
// split"): every write keeps the latest cut until a next cut replaces it,
// which happens only once the replaced cut's residual exists, and a
// parent completes only after that too.
func (a *auditor) cutVersion(key string, rev uint64, t *splitTrack, p, r protocol.ProgressRecord) {
	switch {
	case p.Cut != nil && r.Cut == nil, p.Descriptor != nil && r.Descriptor == nil:
		a.violate(ruleCutDropped, key, rev, t.progressRev, fmt.Sprintf("the record carried the cut of %s and this write dropped it; the residual's records would be read by no one", cutName(p.Cut)))
	case p.Cut != nil && r.Cut.ID == p.Cut.ID && !p.Cut.Equal(*r.Cut):
		a.violate(ruleCutRewritten, key, rev, t.progressRev, fmt.Sprintf("the cut of %s was recorded again with a different residual (weight %d -> %d, or its descriptor); one cut has one residual", p.Cut.ID, p.Cut.Weight, r.Cut.Weight))
	case p.Cut != nil && r.Cut.ID != p.Cut.ID && !a.exists(p.Cut.ID):
		a.violate(ruleCutUnconfirmed, key, rev, t.progressRev, fmt.Sprintf("cut %s replaced cut %s, whose residual has no split record yet", r.Cut.ID, p.Cut.ID))
	}
	if r.Completed && !p.Completed && r.Cut != nil && !a.exists(r.Cut.ID) {
		a.violate(ruleCompletedBefore, key, rev, t.progressRev, fmt.Sprintf("completed while the residual %s of its latest cut had no split record", r.Cut.ID))
	}
}

// exists reports whether the split record of id is in the history so far.
func (a *auditor) exists(id coordination.SplitID) bool {
	t, ok := a.splits[id]
	return ok && t.split != nil
}

// cutName renders a cut for a violation, "none" when nil.
func cutName(c *protocol.Cut) string {
	if c == nil {
		return "none"
	}
	return string(c.ID)
}

// isRequeue reports whether c is an operator's requeue of quarantined p
// (docs/protocol.md, "Requeue"): runnable, fresh attempts, no owner, the
// same epoch and identity.
func isRequeue(p, c protocol.SplitRecord) bool {
	return p.Status == protocol.StatusQuarantined && c.Status == protocol.StatusRunnable &&
		c.Attempts == 0 && c.Owner == "" && c.Epoch == p.Epoch && c.Weight == p.Weight
}

// violate records a violation.
func (a *auditor) violate(rule, key string, rev, prev uint64, detail string) {
	v := violation{Rule: rule, Key: key, Rev: rev, PrevRev: prev, Detail: detail}
	a.found = append(a.found, v)
	if a.onViolation != nil {
		a.onViolation(v)
	}
}

// orNone renders an empty instance as "none".
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// watermarkText renders a watermark, "null" when absent.
func watermarkText(w *int64) string {
	if w == nil {
		return "null"
	}
	return fmt.Sprint(*w)
}

// auditReport is the audit's summary; its JSON form is the -json output.
type auditReport struct {
	Job        string      `json:"job"`
	Revisions  int         `json:"revisions"`
	Keys       int         `json:"keys"`
	Splits     int         `json:"splits"`
	Requeues   int         `json:"requeues"`
	Deepest    int         `json:"deepest_key_history"`
	Truncated  int         `json:"truncated_splits"`
	Followed   bool        `json:"followed"`
	Violations []violation `json:"violations"`
}

// report summarises the audit so far. Splits held back for want of a plan
// record count as unreadable.
func (a *auditor) report(job string) auditReport {
	r := auditReport{Job: job, Revisions: a.events, Keys: len(a.perKey), Splits: len(a.splits), Requeues: a.requeues, Truncated: len(a.truncated), Violations: append([]violation{}, a.found...)}
	for _, n := range a.perKey {
		r.Deepest = max(r.Deepest, n)
	}
	for _, e := range a.pending {
		r.Violations = append(r.Violations, violation{Rule: ruleUnreadable, Key: e.Entry.Key, Rev: uint64(e.Entry.Revision), Detail: "no " + protocol.KeyPlan + " record in the history to check it against"})
	}
	return r
}
