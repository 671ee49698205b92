package testkit

import (
	"bytes"
	"fmt"
	"sort"
	"sync"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// RecordVersion is one successful write to one of a split's two durable
// records, as observed in the store (docs/protocol.md, "Records"): its split
// record (placement: epoch, owner, nonce, attempts, status) or, when
// Progress is set, its progress record (epoch, owner, watermark, state,
// completed). [Fleet.Record] merges the latest of each into one value.
type RecordVersion struct {
	Split    coordination.SplitID
	Revision store.Revision
	// Progress marks a version of the progress record; otherwise it is one
	// of the split record.
	Progress bool
	// Deleted marks the deletion of the record; the other fields are zero.
	Deleted  bool
	Epoch    uint64
	Owner    string // "" for null
	Nonce    string // split records: the owner's session; "" for null
	Attempts uint32
	// Status is the split record's status as stored: "runnable",
	// "completed" or "quarantined" ("" on progress versions).
	Status    string
	Watermark *int64
	State     []byte
	Completed bool
}

// terminal reports whether the version is a completed or quarantined split
// record, or a completed progress record.
func (v RecordVersion) terminal() bool {
	return v.Status == "completed" || v.Status == "quarantined" || (v.Progress && v.Completed)
}

// String renders the version for violation messages.
func (v RecordVersion) String() string {
	family := "split"
	if v.Progress {
		family = "progress"
	}
	if v.Deleted {
		return fmt.Sprintf("%s rev %d deleted", family, v.Revision)
	}
	wm := "null"
	if v.Watermark != nil {
		wm = fmt.Sprint(*v.Watermark)
	}
	owner := v.Owner
	if owner == "" {
		owner = "null"
	}
	if v.Progress {
		return fmt.Sprintf("progress rev %d{epoch %d owner %s watermark %s completed %t}", v.Revision, v.Epoch, owner, wm, v.Completed)
	}
	return fmt.Sprintf("split rev %d{epoch %d owner %s attempts %d %s}", v.Revision, v.Epoch, owner, v.Attempts, v.Status)
}

// progress returns the committed progress of the version as a Gained event
// would carry it: nil for a null watermark, an empty state as nil.
func (v RecordVersion) progress() *coordination.SplitProgress {
	if v.Watermark == nil {
		return nil
	}
	p := &coordination.SplitProgress{Watermark: *v.Watermark, Completed: v.Completed}
	if len(v.State) > 0 {
		p.State = v.State
	}
	return p
}

func sameProgress(a, b *coordination.SplitProgress) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Watermark == b.Watermark && a.Completed == b.Completed && bytes.Equal(a.State, b.State)
}

func progressString(p *coordination.SplitProgress) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprintf("{watermark %d state %dB completed %t}", p.Watermark, len(p.State), p.Completed)
}

// Checker checks the fleet invariants on a stream of record
// versions (fed in revision order) and member events (fed in each member's
// Poll order):
//
//   - I1 a split's committed watermark never decreases and never becomes null;
//   - I2 a progress version that changes watermark, state or completed keeps
//     the epoch and owner of the version before it; one that changes the
//     epoch (a fence) changes no progress and follows a split record version
//     naming its owner at its epoch (the claim);
//   - I3 epochs and attempts never decrease, in both records;
//   - I4 after a completed or quarantined split record version, or a
//     completed progress version, that record is never written again;
//   - I5 across the fleet no two Gained events share (split, epoch), each
//     member's Gained epochs of a split strictly increase (E2), a Gained is
//     never emitted for a split the member holds and a Lost only for one it
//     holds (E1), and (checked by [Checker.Check]) every Gained matches a
//     fence version naming that member at that epoch and carries exactly that
//     version's committed progress (nothing replayed); and
//     Quarantined at most once per split (E5), RevokeRequested only for a
//     held split (E6) and nothing after the verdict (E7), per member
//     incarnation;
//   - I6 ([Checker.CheckVerdicts]) every member alive at the end of a bounded
//     run received the same verdict.
//
// Violations are collected, each naming the split, the revisions and the
// members involved. A Checker is safe for concurrent use.
type Checker struct {
	mu          sync.Mutex
	splits      map[coordination.SplitID]*splitHistory
	gained      map[gainKey]string // (split, epoch) -> member
	pending     []pendingGain      // Gained events not yet matched to a claim version
	held        map[string]map[coordination.SplitID]coordination.LeaseEpoch
	gone        map[string]map[coordination.SplitID]bool // surrendered voluntarily, not re-gained
	quarantined map[string]map[coordination.SplitID]bool // Quarantined events per member incarnation
	verdict     map[string]coordination.Event            // per member incarnation
	lastGain    map[string]map[coordination.SplitID]coordination.LeaseEpoch
	violations  []string
}

type splitHistory struct {
	versions []RecordVersion // both families, in feed order
	split    *RecordVersion  // latest split record version
	progress *RecordVersion  // latest progress record version
	claims   map[claimKey]bool
}

type claimKey struct {
	epoch uint64
	owner string
}

type gainKey struct {
	split coordination.SplitID
	epoch coordination.LeaseEpoch
}

type pendingGain struct {
	member   string
	instance string
	split    coordination.SplitID
	epoch    coordination.LeaseEpoch
	progress *coordination.SplitProgress
}

// NewChecker returns a Checker with no history.
func NewChecker() *Checker {
	return &Checker{
		splits:      make(map[coordination.SplitID]*splitHistory),
		gained:      make(map[gainKey]string),
		held:        make(map[string]map[coordination.SplitID]coordination.LeaseEpoch),
		gone:        make(map[string]map[coordination.SplitID]bool),
		quarantined: make(map[string]map[coordination.SplitID]bool),
		verdict:     make(map[string]coordination.Event),
		lastGain:    make(map[string]map[coordination.SplitID]coordination.LeaseEpoch),
	}
}

func (c *Checker) violate(format string, args ...any) {
	c.violations = append(c.violations, fmt.Sprintf(format, args...))
}

// Violations returns every violation found so far, in the order found.
func (c *Checker) Violations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.violations...)
}

// Versions returns the recorded versions of split, in revision order.
func (c *Checker) Versions(split coordination.SplitID) []RecordVersion {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.splits[split]
	if h == nil {
		return nil
	}
	return append([]RecordVersion(nil), h.versions...)
}

// Splits returns the ids of every split with a recorded version, sorted.
func (c *Checker) Splits() []coordination.SplitID {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]coordination.SplitID, 0, len(c.splits))
	for id := range c.splits {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Current returns split's latest state as one value: the split record's
// fields (revision, epoch, owner, nonce, attempts, status) from its latest
// split record version, and watermark, state and completed from its latest
// progress record version. False if nothing was recorded for split.
func (c *Checker) Current(split coordination.SplitID) (RecordVersion, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.splits[split]
	if h == nil {
		return RecordVersion{}, false
	}
	var v RecordVersion
	if h.split != nil {
		v = *h.split
	}
	v.Split = split
	if h.progress != nil && !h.progress.Deleted {
		v.Watermark, v.State, v.Completed = h.progress.Watermark, h.progress.State, h.progress.Completed
	}
	return v, true
}

// Write feeds one record version and checks I1 to I4 against the previous
// version of the same record. Versions of one record must be fed in
// revision order.
func (c *Checker) Write(v RecordVersion) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.splits[v.Split]
	if h == nil {
		h = &splitHistory{claims: map[claimKey]bool{}}
		c.splits[v.Split] = h
	}
	prev := &h.split
	if v.Progress {
		prev = &h.progress
	}
	if *prev != nil {
		c.checkTransition(v.Split, h, **prev, v)
	} else if v.Progress && !v.Deleted {
		c.checkFence(v.Split, h, nil, v)
	}
	h.versions = append(h.versions, v)
	stored := v
	*prev = &stored
	if !v.Progress && !v.Deleted && v.Owner != "" {
		h.claims[claimKey{v.Epoch, v.Owner}] = true
	}
}

func (c *Checker) checkTransition(split coordination.SplitID, h *splitHistory, prev, v RecordVersion) {
	if v.Revision <= prev.Revision {
		c.violate("recorder: split %s: version %s arrived after %s (revisions out of order)", split, v, prev)
		return
	}
	if prev.Deleted {
		return // a re-created record starts a new history; nothing to compare
	}
	if prev.terminal() {
		c.violate("I4: split %s: terminal version %s was followed by %s (terminal records never change)", split, prev, v)
		return
	}
	if v.Deleted {
		return
	}
	if v.Epoch < prev.Epoch {
		c.violate("I3: split %s: epoch decreased: %s -> %s", split, prev, v)
	}
	if !v.Progress {
		if v.Attempts < prev.Attempts {
			c.violate("I3: split %s: attempts decreased: %s -> %s", split, prev, v)
		}
		return
	}
	if prev.Watermark != nil && v.Watermark == nil {
		c.violate("I1: split %s: watermark became null: %s -> %s", split, prev, v)
	}
	if prev.Watermark != nil && v.Watermark != nil && *v.Watermark < *prev.Watermark {
		c.violate("I1: split %s: watermark decreased: %s -> %s", split, prev, v)
	}
	c.checkFence(split, h, &prev, v)
}

// checkFence checks I2 on a progress version v after prev (nil: the first):
// a write that changes the epoch (a fence) changes no progress and follows
// a claim naming its owner at its epoch; a write that changes progress (a
// commit) keeps the epoch and owner, and has an owner.
func (c *Checker) checkFence(split coordination.SplitID, h *splitHistory, prev *RecordVersion, v RecordVersion) {
	if prev == nil {
		if v.Epoch > 0 && !h.claims[claimKey{v.Epoch, v.Owner}] {
			c.violate("I2: split %s: progress fenced at epoch %d by %s with no claim naming it: %s", split, v.Epoch, v.Owner, v)
		}
		return
	}
	switch {
	case v.Epoch != prev.Epoch || v.Owner != prev.Owner:
		if changesProgress(*prev, v) {
			c.violate("I2: split %s: progress written under another tenancy: %s -> %s (a commit keeps epoch and owner; a fence changes no progress)", split, *prev, v)
		} else if !h.claims[claimKey{v.Epoch, v.Owner}] {
			c.violate("I2: split %s: progress fenced at epoch %d by %s with no claim naming it: %s -> %s", split, v.Epoch, v.Owner, *prev, v)
		}
	case changesProgress(*prev, v) && v.Owner == "":
		c.violate("I2: split %s: progress written with no owner: %s -> %s", split, *prev, v)
	}
}

func changesProgress(prev, v RecordVersion) bool {
	if (prev.Watermark == nil) != (v.Watermark == nil) {
		return true
	}
	if prev.Watermark != nil && *prev.Watermark != *v.Watermark {
		return true
	}
	return prev.Completed != v.Completed || !bytes.Equal(prev.State, v.State)
}

// Event feeds one event that member emitted (in that member's Poll order)
// and checks the event half of I5. member is the worker's InstanceID.
func (c *Checker) Event(member string, ev coordination.Event) { c.EventAs(member, member, ev) }

// EventAs is [Checker.Event] for a process named member whose InstanceID is
// instance (they differ only for live twins, two processes sharing one
// InstanceID). Gained events are matched to record versions by instance.
func (c *Checker) EventAs(member, instance string, ev coordination.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.verdict[member]; ok {
		c.violate("E7: member %s emitted %#v after its verdict %#v", member, ev, v)
	}
	switch ev.(type) {
	case coordination.AllComplete, coordination.Stalled:
		c.verdict[member] = ev
	}
	held := c.held[member]
	if held == nil {
		held = make(map[coordination.SplitID]coordination.LeaseEpoch)
		c.held[member] = held
	}
	if c.lastGain[member] == nil {
		c.lastGain[member] = make(map[coordination.SplitID]coordination.LeaseEpoch)
	}
	if c.gone[member] == nil {
		c.gone[member] = make(map[coordination.SplitID]bool)
	}
	switch e := ev.(type) {
	case coordination.Gained:
		id := e.Split.ID
		if ep, ok := held[id]; ok {
			c.violate("I5/E1: split %s: member %s gained epoch %d while still holding epoch %d", id, member, e.Epoch, ep)
		}
		if last, ok := c.lastGain[member][id]; ok && e.Epoch <= last {
			c.violate("I5/E2: split %s: member %s gained epoch %d after epoch %d", id, member, e.Epoch, last)
		}
		k := gainKey{id, e.Epoch}
		if other, ok := c.gained[k]; ok {
			c.violate("I5: split %s: epoch %d gained twice, by members %s and %s", id, e.Epoch, other, member)
		}
		c.gained[k] = member
		held[id] = e.Epoch
		delete(c.gone[member], id)
		c.lastGain[member][id] = e.Epoch
		c.pending = append(c.pending, pendingGain{member: member, instance: instance, split: id, epoch: e.Epoch, progress: e.Progress})
	case coordination.Lost:
		if _, ok := held[e.Split]; !ok && !c.gone[member][e.Split] {
			c.violate("I5/E1: split %s: member %s emitted Lost without holding it", e.Split, member)
		}
		delete(held, e.Split)
		delete(c.gone[member], e.Split)
	case coordination.RevokeRequested:
		if _, ok := held[e.Split]; !ok && !c.gone[member][e.Split] {
			c.violate("E6: split %s: member %s emitted RevokeRequested without holding it", e.Split, member)
		}
	case coordination.Quarantined:
		if c.quarantined[member] == nil {
			c.quarantined[member] = make(map[coordination.SplitID]bool)
		}
		if c.quarantined[member][e.Split] {
			c.violate("E5: split %s: member %s emitted Quarantined twice", e.Split, member)
		}
		c.quarantined[member][e.Split] = true
	}
}

// Surrendered tells the checker that member gave split up voluntarily (a
// landed completed commit, Fail, Release, ReleaseDrained, Depart) or learned
// from a Fenced result that it is gone, so a later Gained of it is legal and
// a Lost that was already on its way is tolerated.
func (c *Checker) Surrendered(member string, split coordination.SplitID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.held[member][split]; !ok {
		return
	}
	delete(c.held[member], split)
	if c.gone[member] == nil {
		c.gone[member] = make(map[coordination.SplitID]bool)
	}
	c.gone[member][split] = true
}

// Restarted forgets what member held: a crashed or restarted member's new
// incarnation starts with nothing.
func (c *Checker) Restarted(member string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.held, member)
	delete(c.gone, member)
	delete(c.quarantined, member)
	delete(c.verdict, member)
}

// Check matches every pending Gained event against the record versions fed
// so far: the split must have a progress version at that epoch naming that
// member, and the first such version (the claim's fence) must carry exactly
// the Gained progress. When final is false, a Gained with no matching version yet stays
// pending; when true it is a violation.
func (c *Checker) Check(final bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.pending[:0]
	for _, g := range c.pending {
		claim, ok := c.claimVersion(g.split, g.epoch, g.instance)
		if !ok {
			if final {
				c.violate("I5: split %s: member %s gained epoch %d but no record version names it at that epoch", g.split, g.member, g.epoch)
			} else {
				kept = append(kept, g)
			}
			continue
		}
		if !sameProgress(g.progress, claim.progress()) {
			c.violate("I5/G4: split %s: member %s gained epoch %d with progress %s but the claim %s carries %s (a move must resume at the committed cut)",
				g.split, g.member, g.epoch, progressString(g.progress), claim, progressString(claim.progress()))
		}
	}
	c.pending = kept
}

func (c *Checker) claimVersion(split coordination.SplitID, epoch coordination.LeaseEpoch, member string) (RecordVersion, bool) {
	h := c.splits[split]
	if h == nil {
		return RecordVersion{}, false
	}
	for _, v := range h.versions {
		if v.Progress && !v.Deleted && v.Epoch == uint64(epoch) && v.Owner == member {
			return v, true
		}
	}
	return RecordVersion{}, false
}

// CheckVerdicts checks I6: verdicts maps every member alive at the end of a
// bounded run to the verdict it received (nil if none). Every member must
// have received one, and all must be equal.
func (c *Checker) CheckVerdicts(verdicts map[string]coordination.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	members := make([]string, 0, len(verdicts))
	for m := range verdicts {
		members = append(members, m)
	}
	sort.Strings(members)
	var first coordination.Event
	var firstMember string
	for _, m := range members {
		v := verdicts[m]
		if v == nil {
			c.violate("I6: member %s is alive at the end of the run but received no verdict", m)
			continue
		}
		if first == nil {
			first, firstMember = v, m
			continue
		}
		if v != first {
			c.violate("I6: members %s and %s received different verdicts: %#v and %#v", firstMember, m, first, v)
		}
	}
}
