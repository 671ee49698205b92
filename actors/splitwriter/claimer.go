package splitwriter

import (
	"container/heap"
	"slices"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
)

// MaxClaimsInFlight bounds the writes the claimer runs at once (claims,
// quarantines on takeover and leftover returns together), so a worker
// assigned thousands of splits, or finding thousands of quarantine
// candidates after a crash loop, does not start thousands of store writes in
// one burst; the rest follow as writes finish.
const MaxClaimsInFlight = 128

// claimer is the split-writer actor's claim pipeline (docs/protocol.md,
// "Claim candidates", "Following the assignment"). It decides on the
// actor's one view of the split records, the one its writes run on and
// learn from: for the assigned splits it picks claim candidates under
// MaxInFlight from an incremental index, quarantines on takeover and
// returns leftovers. Applying one record costs O(log n).
//
// Its structures are derived, never sources of truth: queue and extra
// index the candidates recomputed from the view, the sessions and the held
// tenancies (the actor's registry, tenancy.go) whenever one of them changes, so that a decision costs O(log n)
// instead of a pass over every split.
type claimer struct {
	sw      *splitWriterActor
	enqueue func(c *actor.Context, op splitOp) // the actor's write queue (a test's recorder)

	members wire.Members                             // the live members, the watch's (the last PresenceChanged's Live)
	byOwner map[string]map[coordination.SplitID]bool // instance → splits its records name

	inflight map[coordination.SplitID]bool   // every write in flight (bounded by MaxClaimsInFlight); value: it counts as a claim against MaxInFlight (quarantines and leftover returns do not)
	claims   int                             // claims in flight
	handing  map[coordination.SplitID]uint64 // the surrender writes asked (surrender, tenancy.go) and not resolved yet: split → epoch
	lostAt   map[coordination.SplitID]uint64 // a claim lost at this record revision
	cooldown map[coordination.SplitID]bool   // the store failed; retry at the next heartbeat
	extra    map[coordination.SplitID]bool   // quarantine candidates and leftovers: acted on regardless of assignment
	queue    candidateQueue                  // claim candidates among assigned splits (lazily validated)
	queued   map[coordination.SplitID]protocol.ClaimKind

	// stranded holds the landed claims of this worker that began no
	// tenancy, while the view shows the record they wrote (at its
	// revision): acted on without charge, whatever session it names.
	stranded map[coordination.SplitID]strandedClaim

	decided  bool                               // an assignment record is known
	assigned worker.AssignedSet                 // owner: the assigned set, as the last applied assignment record names it
	named    map[coordination.SplitID]time.Time // first named while not held

	live    bool // the watches are live
	session bool // a session is established (false from a SessionChanged that is not Live until one that is)
}

func newClaimer(sw *splitWriterActor) *claimer {
	return &claimer{
		sw:       sw,
		enqueue:  sw.enqueue,
		byOwner:  map[string]map[coordination.SplitID]bool{},
		inflight: map[coordination.SplitID]bool{},
		handing:  map[coordination.SplitID]uint64{},
		lostAt:   map[coordination.SplitID]uint64{},
		stranded: map[coordination.SplitID]strandedClaim{},
		cooldown: map[coordination.SplitID]bool{},
		extra:    map[coordination.SplitID]bool{},
		queued:   map[coordination.SplitID]protocol.ClaimKind{},
		assigned: worker.AssignedSet{},
		named:    map[coordination.SplitID]time.Time{},
		session:  true,
	}
}

// recordChanged follows the view taking a newer version (rev) of split
// id's record, naming owner, over one naming oldOwner (had: there was one),
// and reports whether the split is now one to act on.
func (cl *claimer) recordChanged(id coordination.SplitID, had bool, oldOwner, owner string, rev uint64) bool {
	if had {
		cl.unindexOwner(id, oldOwner)
	}
	cl.indexOwner(id, owner)
	if r, ok := cl.lostAt[id]; ok && rev > r {
		delete(cl.lostAt, id)
	}
	if u, ok := cl.stranded[id]; ok && rev > u.rev {
		delete(cl.stranded, id) // the record moved: the usual rules apply
	}
	return cl.reindex(id)
}

// recordDeleted follows the view dropping split id's record, which named
// oldOwner.
func (cl *claimer) recordDeleted(id coordination.SplitID, oldOwner string) {
	cl.unindexOwner(id, oldOwner)
	delete(cl.stranded, id)
	cl.index(id)
}

// presence takes the live members m carries, and re-classifies the splits
// whose records name m's member when its session changed.
func (cl *claimer) presence(m wire.PresenceChanged) {
	old := cl.nonceOf(m.Instance)
	cl.members = m.Live
	if cl.nonceOf(m.Instance) == old {
		return
	}
	for id := range cl.byOwner[m.Instance] {
		delete(cl.lostAt, id)
		cl.index(id)
	}
}

// nonceOf is member inst's live session nonce; "" when it is not live.
func (cl *claimer) nonceOf(inst string) string {
	m, _ := cl.members.Get(inst)
	return m.Nonce
}

// sessionStarted re-classifies the view: its own-session records were
// classified for the old nonce.
func (cl *claimer) sessionStarted() {
	cl.session = true
	for id := range cl.sw.records {
		cl.index(id)
	}
}

// heartbeat lets the splits whose write failed be tried again.
func (cl *claimer) heartbeat() {
	for id := range cl.cooldown {
		delete(cl.cooldown, id)
		cl.index(id)
	}
}

// tenancyStarted follows the registry: the claim's slot is free, so the
// next write starts at once, and the split is held (or, when the registry
// refused the tenancy, a candidate again).
func (cl *claimer) tenancyStarted(id coordination.SplitID) {
	cl.release(id)
	if t, ok := cl.named[id]; ok {
		cl.sw.v.Metrics.Latency(cl.sw.v.Clock.Since(t))
		delete(cl.named, id)
	}
	cl.index(id)
}

// tenancyEnded follows the registry, as surrender (tenancy.go) ended the
// tenancy with the write it asked: a surrendered split waits for that
// write's resolution before it is a candidate again (a fenced or starved
// one has no write).
func (cl *claimer) tenancyEnded(m wire.TenancyEnded) {
	if m.Reason != wire.EndFenced && m.Reason != wire.EndStarved {
		cl.handing[m.Split] = m.Epoch
	}
	if cl.assigned[m.Split] {
		cl.named[m.Split] = cl.sw.v.Clock.Now()
	}
	cl.index(m.Split)
}

// handBackResolved frees a surrendered split once its write resolved. The
// write was asked in the surrender that ended the tenancy, so the split is
// already handing.
func (cl *claimer) handBackResolved(m wire.HandBackResolved) {
	if e, ok := cl.handing[m.Split]; ok && e == m.Epoch {
		delete(cl.handing, m.Split)
		cl.index(m.Split)
	}
}

// abandoned frees a claim's (or a leftover return's) slot and holds the
// split back until a record newer than rev, or the next heartbeat after a
// store failure (retry).
func (cl *claimer) abandoned(id coordination.SplitID, rev uint64, retry bool) {
	cl.release(id)
	if retry {
		cl.cooldown[id] = true
	} else if r := cl.sw.records[id].Rev; rev >= r {
		cl.lostAt[id] = rev
	}
	cl.index(id)
}

// completionErred follows a claim of split id, landed at record revision
// rev, whose fence found the progress record completed and whose
// completion of the split record erred: the completion alone is retried
// at the next heartbeat, regardless of the assignment, while the view
// shows the record at rev (docs/protocol.md, "Claim protocol", step 3).
// The caller abandons the claim for the heartbeat (abandoned, retry).
func (cl *claimer) completionErred(id coordination.SplitID, rev uint64) {
	if cl.sw.records[id].Rev == rev {
		cl.stranded[id] = strandedClaim{rev: rev, complete: true}
	}
}

// outlived reports whether a landed claim that wrote session nonce
// returned after that session ended (this worker's session is not live,
// or is another): it must not begin a tenancy (docs/protocol.md, "Claim
// protocol", step 4). After the verdict or once Depart began it is not
// taken as outlived: claimWon hands the split back at once, as for any
// claim that returns then.
func (cl *claimer) outlived(nonce string) bool {
	sw := cl.sw
	return !sw.verdict && !sw.departing && (!cl.session || nonce != sw.nonce)
}

// claimOutlived frees the slot of split id's claim, landed at record
// revision rev under a session that ended while it was in flight (outlived).
// No tenancy began, so nothing ran under it and the record is taken as a
// leftover of this worker's current session while the view shows it at
// rev: claimed again without charge if assigned here, else handed back,
// once a session is live (docs/protocol.md, "Claim protocol", step 4).
func (cl *claimer) claimOutlived(id coordination.SplitID, rev uint64) {
	cl.release(id)
	if cl.sw.records[id].Rev == rev {
		cl.stranded[id] = strandedClaim{rev: rev}
	}
	cl.index(id)
}

// strandedAt returns the claim of this worker that began no tenancy and
// wrote split id's record at revision rev, if there is one (stranded).
func (cl *claimer) strandedAt(id coordination.SplitID, rev uint64) (strandedClaim, bool) {
	s, ok := cl.stranded[id]
	return s, ok && s.rev == rev
}

// assignment applies the splits of this worker's assignment record, next:
// the claimer owns the assigned set (docs/architecture.md, "One owner per
// fact") and diffs it here. A split next newly names is a claim candidate,
// one it no longer names a leftover to return if this worker's session
// holds its record.
func (cl *claimer) assignment(next []coordination.SplitID) {
	set, added, removed := diffAssigned(cl.assigned, next)
	cl.decided, cl.assigned = true, set
	now := cl.sw.v.Clock.Now()
	for _, id := range added {
		if _, held := cl.sw.reg.held[id]; !held {
			if _, ok := cl.named[id]; !ok {
				cl.named[id] = now
			}
		}
		cl.index(id)
	}
	for _, id := range removed {
		delete(cl.named, id)
		cl.index(id) // a leftover no longer assigned is returned
	}
}

// unassigned applies the deletion of this worker's assignment record:
// nothing is decided until a new record appears, whose splits are then
// all newly named.
func (cl *claimer) unassigned() {
	cl.decided = false
	cl.assigned = worker.AssignedSet{}
	cl.named = map[coordination.SplitID]time.Time{}
}

// diffAssigned is the one place the assignment is diffed: the set next
// names, what it names that old does not (added, in next's order) and what
// old names that it does not (removed, sorted), as franz-go's group
// consumer computes (added, lost) in diffAssigned.
func diffAssigned(old worker.AssignedSet, next []coordination.SplitID) (set worker.AssignedSet, added, removed []coordination.SplitID) {
	set = make(worker.AssignedSet, len(next))
	for _, id := range next {
		set[id] = true
		if !old[id] {
			added = append(added, id)
		}
	}
	for id := range old {
		if !set[id] {
			removed = append(removed, id)
		}
	}
	slices.Sort(removed)
	return set, added, removed
}

func (cl *claimer) indexOwner(id coordination.SplitID, owner string) {
	if owner == "" {
		return
	}
	s := cl.byOwner[owner]
	if s == nil {
		s = map[coordination.SplitID]bool{}
		cl.byOwner[owner] = s
	}
	s[id] = true
}

func (cl *claimer) unindexOwner(id coordination.SplitID, owner string) {
	if s := cl.byOwner[owner]; s != nil {
		delete(s, id)
		if len(s) == 0 {
			delete(cl.byOwner, owner)
		}
	}
}

func (cl *claimer) input(id coordination.SplitID) (protocol.CandidateInput, bool) {
	r, ok := cl.sw.records[id]
	if !ok {
		return protocol.CandidateInput{}, false
	}
	_, held := cl.sw.reg.held[id]
	v := cl.sw.v
	return protocol.CandidateInput{
		Record: r.Rec, Held: held, OwnerSession: cl.nonceOf(r.Rec.Owner),
		Me: v.ID, MyNonce: cl.sw.nonce, MaxAttempts: v.Config.MaxAttempts,
	}, true
}

// classify returns split id's candidate when it is one this worker may act
// on now (not busy, not waiting for a newer revision or the heartbeat).
func (cl *claimer) classify(id coordination.SplitID) (protocol.Candidate, bool) {
	_, busy := cl.handing[id]
	if _, claiming := cl.inflight[id]; busy || claiming || cl.cooldown[id] {
		return protocol.Candidate{}, false
	}
	if _, lost := cl.lostAt[id]; lost {
		return protocol.Candidate{}, false
	}
	in, ok := cl.input(id)
	if !ok {
		return protocol.Candidate{}, false
	}
	if _, ok := cl.stranded[id]; ok && !in.Held {
		// This worker's own claim, under whatever session it wrote: nothing
		// ran under it, so it is a leftover, never charged.
		return protocol.Candidate{ID: id, Kind: protocol.KindReleased, Leftover: true}, true
	}
	return protocol.Classify(in)
}

// index files split id where its classification puts it: the extra set
// (quarantine candidates, and leftovers to return) or the claim queue
// (claim candidates among assigned splits, leftovers included).
func (cl *claimer) index(id coordination.SplitID) {
	cand, ok := cl.classify(id)
	switch {
	case ok && cl.actsRegardless(cand):
		cl.extra[id] = true
	case ok && cl.assigned[id]:
		delete(cl.extra, id)
		if k, queued := cl.queued[id]; !queued || k != cand.Kind {
			cl.queued[id] = cand.Kind
			heap.Push(&cl.queue, queuedCandidate{kind: cand.Kind, id: id})
		}
	default:
		delete(cl.extra, id)
	}
}

// actsRegardless reports whether cand is acted on whatever the assignment
// and the lane budget: a quarantine on takeover, a claim's completion to
// retry, or the return of a leftover that a decided assignment does not
// name here.
func (cl *claimer) actsRegardless(cand protocol.Candidate) bool {
	return cand.Quarantine || cl.stranded[cand.ID].complete || (cand.Leftover && cl.decided && !cl.assigned[cand.ID])
}

// reindex re-indexes split id and reports whether it is one to act on: a
// quarantine candidate, a leftover to return, or a queued claim candidate.
func (cl *claimer) reindex(id coordination.SplitID) bool {
	cl.index(id)
	return cl.extra[id] || cl.queued[id] != 0
}

// release frees split id's in-flight slot.
func (cl *claimer) release(id coordination.SplitID) {
	if claim, ok := cl.inflight[id]; ok {
		delete(cl.inflight, id)
		if claim {
			cl.claims--
		}
	}
}

// step starts the claims, quarantines and leftover returns the view allows,
// at most MaxClaimsInFlight writes at once: quarantines and leftover returns
// first, then claims while the lanes allow.
func (cl *claimer) step(c *actor.Context) {
	sw := cl.sw
	if !cl.live || !cl.session || sw.verdict || sw.departing || sw.v.Halted() {
		return
	}
	for id := range cl.extra {
		if len(cl.inflight) >= MaxClaimsInFlight {
			return
		}
		if cand, ok := cl.classify(id); ok && cl.actsRegardless(cand) {
			cl.launch(c, id, cand)
		}
	}
	if !cl.decided {
		return
	}
	for cl.queue.Len() > 0 && sw.reg.len()+cl.claims < sw.v.Config.MaxInFlight && len(cl.inflight) < MaxClaimsInFlight {
		q := heap.Pop(&cl.queue).(queuedCandidate)
		if cl.queued[q.id] != q.kind {
			continue // superseded by a later entry of another kind
		}
		delete(cl.queued, q.id)
		if !cl.assigned[q.id] {
			continue
		}
		if cand, ok := cl.classify(q.id); ok && cand.Kind == q.kind && !cand.Quarantine {
			cl.launch(c, q.id, cand)
		}
	}
}

// launch asks for the write cand asks for on its split. It starts at once,
// in the step that checked the job's phase: the claimer never asks for a
// split with a write in flight (held, handing back or in flight), so its
// writes never queue behind another on their split.
func (cl *claimer) launch(c *actor.Context, id coordination.SplitID, cand protocol.Candidate) {
	r := cl.sw.records[id]
	if cl.stranded[id].complete {
		cl.inflight[id] = false
		cl.enqueue(c, claimOp{claim: claimRequest{Candidate: cand, Record: r.Rec, RecordRev: r.Rev, Nonce: cl.sw.nonce, FP: cl.sw.fp, Complete: true}})
		return
	}
	if cand.Leftover && !cl.assigned[id] {
		cl.inflight[id] = false
		cl.enqueue(c, leftoverOp{leftover: leftoverReturn{Split: id, Record: r.Rec, RecordRev: r.Rev}})
		return
	}
	cl.inflight[id] = !cand.Quarantine
	if !cand.Quarantine {
		cl.claims++
	}
	cl.enqueue(c, claimOp{claim: claimRequest{Candidate: cand, Record: r.Rec, RecordRev: r.Rev, Nonce: cl.sw.nonce, FP: cl.sw.fp}})
}

// strandedClaim is a claim of this worker that landed but began no
// tenancy, by the split record revision it wrote (docs/protocol.md, "Claim
// protocol"): the record names this worker at the claim's epoch and
// nothing ran under it.
type strandedClaim struct {
	rev uint64
	// complete: the fence found the progress record completed and the
	// completion of the split record erred, so the completion alone is
	// retried. Otherwise the claim's session ended while it was in flight.
	complete bool
}

// queuedCandidate is one entry of the claim queue.
type queuedCandidate struct {
	kind protocol.ClaimKind
	id   coordination.SplitID
}

// candidateQueue is a min-heap of claim candidates in claim priority order
// (kind, then id). Entries are validated when popped.
type candidateQueue []queuedCandidate

func (q candidateQueue) Len() int { return len(q) }
func (q candidateQueue) Less(i, j int) bool {
	return protocol.CandidateLess(protocol.Candidate{ID: q[i].id, Kind: q[i].kind}, protocol.Candidate{ID: q[j].id, Kind: q[j].kind})
}
func (q candidateQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *candidateQueue) Push(x any)   { *q = append(*q, x.(queuedCandidate)) }
func (q *candidateQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
