package assign

import (
	"container/heap"
	"fmt"
	"log/slog"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/messages"
)

// MaxClaimsInFlight bounds the writes the assign actor runs at once (claims,
// quarantines on takeover and leftover returns together), so a worker
// assigned thousands of splits, or finding thousands of quarantine
// candidates after a crash loop, does not start thousands of store writes in
// one burst; the rest follow as writes finish.
const MaxClaimsInFlight = 128

// assignActor follows this worker's assignment record (docs/protocol.md,
// "Following the assignment"): it keeps the claim view (split records and
// sessions), picks claim candidates for assigned splits under
// MaxInFlight from an incremental index, quarantines on takeover, returns
// leftovers, and tells the revoke actor the assigned set. Applying one
// observation costs O(log n).
//
// Two of its structures are derived, never sources of truth: held is a
// view of the root's tenancy registry fed only by TenancyStarted and
// TenancyEnded (tenancy.go), and queue is an index of claim candidates
// recomputed from the claim view and held whenever either changes, kept so
// that a decision costs O(log n) instead of a pass over every split.
type assignActor struct {
	v   *worker.Env
	log *slog.Logger

	records  map[coordination.SplitID]worker.SplitEntry
	sessions map[string]string                        // instance → live session nonce
	byOwner  map[string]map[coordination.SplitID]bool // instance → splits its records name

	held     worker.HeldView                 // derived from the root's registry (tenancy.go)
	inflight map[coordination.SplitID]bool   // every write in flight (bounded by maxClaimsInFlight); value: it counts as a claim against MaxInFlight (quarantines and leftover returns do not)
	claims   int                             // claims in flight
	handing  map[coordination.SplitID]uint64 // surrendered, its write not resolved yet
	lostAt   map[coordination.SplitID]uint64 // a claim lost at this record revision
	cooldown map[coordination.SplitID]bool   // the store failed; retry at the next heartbeat
	extra    map[coordination.SplitID]bool   // quarantine candidates and leftovers: acted on regardless of assignment
	queue    candidateQueue                  // derived index of claim candidates among assigned splits (lazily validated), fed by the view and the registry's messages
	queued   map[coordination.SplitID]protocol.ClaimKind

	decided    bool
	appliedGen uint64
	assigned   map[coordination.SplitID]bool
	named      map[coordination.SplitID]time.Time // first named while not held

	phase   worker.JobPhase
	session bool // a session is established (false between SessionEnded and SessionStarted)
}

// New returns the producer of worker v's assignment-diffing actor.
func New(v *worker.Env) actor.Producer {
	return func() actor.Receiver {
		return &assignActor{
			v:        v,
			log:      v.Log.With("actor", "assign"),
			records:  map[coordination.SplitID]worker.SplitEntry{},
			sessions: map[string]string{},
			byOwner:  map[string]map[coordination.SplitID]bool{},
			held:     worker.HeldView{},
			inflight: map[coordination.SplitID]bool{},
			handing:  map[coordination.SplitID]uint64{},
			lostAt:   map[coordination.SplitID]uint64{},
			cooldown: map[coordination.SplitID]bool{},
			extra:    map[coordination.SplitID]bool{},
			queued:   map[coordination.SplitID]protocol.ClaimKind{},
			assigned: map[coordination.SplitID]bool{},
			named:    map[coordination.SplitID]time.Time{},
			session:  true,
		}
	}
}

// Receive handles one message.
func (a *assignActor) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized, actor.Started, actor.Stopped:
	case messages.JobStarted:
	case recordmsg.RecordsObserved:
		act := false
		for _, r := range m.Records {
			act = a.recordObserved(r) || act
		}
		if act {
			a.step(c)
		}
	case messages.RecordDeleted:
		if old, ok := a.records[m.Split]; ok {
			a.unindexOwner(m.Split, old.Rec.Owner)
			delete(a.records, m.Split)
		}
		a.changed(c, m.Split)
	case messages.PresenceObserved:
		if a.sessions[m.Instance] != m.Nonce {
			a.sessions[m.Instance] = m.Nonce
			a.ownerChanged(c, m.Instance)
		}
	case messages.PresenceDeleted:
		if _, ok := a.sessions[m.Instance]; ok {
			delete(a.sessions, m.Instance)
			a.ownerChanged(c, m.Instance)
		}
	case recordmsg.AssignmentObserved:
		a.assignment(c, m)
	case messages.AssignmentDeleted:
		a.unassigned()
	case messages.TenancyStarted:
		a.tenancyStarted(c, m)
	case messages.TenancyEnded:
		a.tenancyEnded(c, m)
	case messages.HandBackResolved:
		a.handBackResolved(c, m)
	case messages.ClaimAbandoned:
		a.claimAbandoned(c, m)
	case messages.HeartbeatTicked:
		for id := range a.cooldown {
			delete(a.cooldown, id)
			a.index(id)
		}
		a.step(c)
	case messages.WatchesChanged:
		a.phase.Observe(m)
		a.step(c)
	case messages.SessionEnded:
		a.session = false
	case messages.SessionStarted:
		a.session = true
		for id := range a.records {
			a.index(id) // the view's own-session records were classified for the old nonce
		}
		a.step(c)
	case messages.VerdictReached, messages.Departing:
		a.phase.Observe(m)
	default:
		a.log.Warn("unknown message", "type", fmt.Sprintf("%T", m))
	}
}

// recordObserved applies a split record put to the claim view and reports
// whether the split is now one to act on (see reindex).
func (a *assignActor) recordObserved(m recordmsg.RecordObserved) bool {
	old, had := a.records[m.Split]
	if had && m.Rev <= old.Rev {
		return false
	}
	if had {
		a.unindexOwner(m.Split, old.Rec.Owner)
	}
	a.records[m.Split] = worker.SplitEntry{Rec: m.Record, Rev: m.Rev}
	a.indexOwner(m.Split, m.Record.Owner)
	if r, ok := a.lostAt[m.Split]; ok && m.Rev > r {
		delete(a.lostAt, m.Split)
	}
	return a.reindex(m.Split)
}

// tenancyStarted follows the registry: the claim's slot is free, so the
// next write starts at once, and the split is held.
func (a *assignActor) tenancyStarted(c *actor.Context, m messages.TenancyStarted) {
	a.held.Apply(m)
	a.release(m.Split)
	if t, ok := a.named[m.Split]; ok {
		a.v.Metrics.Latency(a.v.Clock.Since(t))
		delete(a.named, m.Split)
	}
	a.changed(c, m.Split)
	a.step(c)
}

// tenancyEnded follows the registry: a surrendered split waits for its
// hand-back's resolution before it is a candidate again (a fenced or
// starved one has none).
func (a *assignActor) tenancyEnded(c *actor.Context, m messages.TenancyEnded) {
	a.held.Apply(m)
	if m.Reason != messages.EndFenced && m.Reason != messages.EndStarved {
		a.handing[m.Split] = m.Epoch
	}
	if a.assigned[m.Split] {
		a.named[m.Split] = a.v.Clock.Now()
	}
	a.changed(c, m.Split)
	a.step(c)
}

// handBackResolved frees a surrendered split once its write resolved. The
// root relays it after the tenancy's TenancyEnded, so the split is already
// handing.
func (a *assignActor) handBackResolved(c *actor.Context, m messages.HandBackResolved) {
	if e, ok := a.handing[m.Split]; ok && e == m.Epoch {
		delete(a.handing, m.Split)
		a.changed(c, m.Split)
	}
}

// claimAbandoned frees a claim's slot and holds the split back until a
// newer record, or the next heartbeat after a store failure.
func (a *assignActor) claimAbandoned(c *actor.Context, m messages.ClaimAbandoned) {
	a.release(m.Split)
	if m.Retry {
		a.cooldown[m.Split] = true
	} else if r := a.records[m.Split].Rev; m.Rev >= r {
		a.lostAt[m.Split] = m.Rev
	}
	a.changed(c, m.Split)
	a.step(c)
}

// unassigned applies the deletion of this worker's assignment record:
// nothing is decided until a new one appears.
func (a *assignActor) unassigned() {
	a.decided = false
	a.assigned = map[coordination.SplitID]bool{}
	a.named = map[coordination.SplitID]time.Time{}
	a.v.Route(worker.RoleAssign, messages.AssignedSetChanged{})
}

// assignment applies this worker's assignment record.
func (a *assignActor) assignment(c *actor.Context, m recordmsg.AssignmentObserved) {
	if m.Assignment.Generation < a.appliedGen {
		return
	}
	a.appliedGen = m.Assignment.Generation
	a.decided = true
	set := make(map[coordination.SplitID]bool, len(m.Assignment.Splits))
	now := a.v.Clock.Now()
	for _, id := range m.Assignment.Splits {
		set[id] = true
		if _, held := a.held[id]; !held {
			if _, ok := a.named[id]; !ok {
				a.named[id] = now
			}
		}
	}
	for id := range a.named {
		if !set[id] {
			delete(a.named, id)
		}
	}
	old := a.assigned
	a.assigned = set
	for id := range set {
		if !old[id] {
			a.index(id)
		}
	}
	for id := range old {
		if !set[id] {
			a.index(id) // a leftover no longer assigned is returned
		}
	}
	a.v.Route(worker.RoleAssign, messages.AssignedSetChanged{Decided: true, Splits: append([]coordination.SplitID(nil), m.Assignment.Splits...)})
	a.step(c)
}

func (a *assignActor) indexOwner(id coordination.SplitID, owner string) {
	if owner == "" {
		return
	}
	s := a.byOwner[owner]
	if s == nil {
		s = map[coordination.SplitID]bool{}
		a.byOwner[owner] = s
	}
	s[id] = true
}

func (a *assignActor) unindexOwner(id coordination.SplitID, owner string) {
	if s := a.byOwner[owner]; s != nil {
		delete(s, id)
		if len(s) == 0 {
			delete(a.byOwner, owner)
		}
	}
}

// ownerChanged re-classifies the splits whose records name instance after
// its session changed: O(its splits).
func (a *assignActor) ownerChanged(c *actor.Context, instance string) {
	for id := range a.byOwner[instance] {
		delete(a.lostAt, id)
		a.index(id)
	}
	a.step(c)
}

func (a *assignActor) input(id coordination.SplitID) (protocol.CandidateInput, bool) {
	r, ok := a.records[id]
	if !ok {
		return protocol.CandidateInput{}, false
	}
	_, held := a.held[id]
	return protocol.CandidateInput{
		Record: r.Rec, Held: held, OwnerSession: a.sessions[r.Rec.Owner],
		Me: a.v.ID, MyNonce: a.v.SessionNonce(), MaxAttempts: a.v.Config.MaxAttempts,
	}, true
}

// classify returns split id's candidate when it is one this worker may act
// on now (not busy, not waiting for a newer revision or the heartbeat).
func (a *assignActor) classify(id coordination.SplitID) (protocol.Candidate, bool) {
	_, busy := a.handing[id]
	if _, claiming := a.inflight[id]; busy || claiming || a.cooldown[id] {
		return protocol.Candidate{}, false
	}
	if _, lost := a.lostAt[id]; lost {
		return protocol.Candidate{}, false
	}
	in, ok := a.input(id)
	if !ok {
		return protocol.Candidate{}, false
	}
	return protocol.Classify(in)
}

// index files split id where its classification puts it: the extra set
// (quarantine candidates, and leftovers to return) or the claim queue
// (claim candidates among assigned splits, leftovers included).
func (a *assignActor) index(id coordination.SplitID) {
	cand, ok := a.classify(id)
	switch {
	case ok && a.actsRegardless(cand):
		a.extra[id] = true
	case ok && a.assigned[id]:
		delete(a.extra, id)
		if k, queued := a.queued[id]; !queued || k != cand.Kind {
			a.queued[id] = cand.Kind
			heap.Push(&a.queue, queuedCandidate{kind: cand.Kind, id: id})
		}
	default:
		delete(a.extra, id)
	}
}

// actsRegardless reports whether cand is acted on whatever the assignment
// and the lane budget: a quarantine on takeover, or the return of a
// leftover that a decided assignment does not name here.
func (a *assignActor) actsRegardless(cand protocol.Candidate) bool {
	return cand.Quarantine || (cand.Leftover && a.decided && !a.assigned[cand.ID])
}

// changed re-indexes split id after an observation and acts on it.
func (a *assignActor) changed(c *actor.Context, id coordination.SplitID) {
	if a.reindex(id) {
		a.step(c)
	}
}

// reindex re-indexes split id and reports whether it is one to act on: a
// quarantine candidate, a leftover to return, or a queued claim candidate.
func (a *assignActor) reindex(id coordination.SplitID) bool {
	a.index(id)
	return a.extra[id] || a.queued[id] != 0
}

// release frees split id's in-flight slot.
func (a *assignActor) release(id coordination.SplitID) {
	if claim, ok := a.inflight[id]; ok {
		delete(a.inflight, id)
		if claim {
			a.claims--
		}
	}
}

// step starts the claims, quarantines and leftover returns the view allows,
// at most maxClaimsInFlight writes at once: quarantines and leftover returns
// first, then claims while the lanes allow.
func (a *assignActor) step(c *actor.Context) {
	if !a.phase.Live || !a.session || a.phase.Over() || a.v.Halted.Load() {
		return
	}
	for id := range a.extra {
		if len(a.inflight) >= MaxClaimsInFlight {
			return
		}
		if cand, ok := a.classify(id); ok && a.actsRegardless(cand) {
			a.launch(c, id, cand)
		}
	}
	if !a.decided {
		return
	}
	for a.queue.Len() > 0 && len(a.held)+a.claims < a.v.Config.MaxInFlight && len(a.inflight) < MaxClaimsInFlight {
		q := heap.Pop(&a.queue).(queuedCandidate)
		if a.queued[q.id] != q.kind {
			continue // superseded by a later entry of another kind
		}
		delete(a.queued, q.id)
		if !a.assigned[q.id] {
			continue
		}
		if cand, ok := a.classify(q.id); ok && cand.Kind == q.kind && !cand.Quarantine {
			a.launch(c, q.id, cand)
		}
	}
}

// launch sends the write cand asks for to the split-writer actor.
func (a *assignActor) launch(c *actor.Context, id coordination.SplitID, cand protocol.Candidate) {
	r := a.records[id]
	if cand.Leftover && !a.assigned[id] {
		a.inflight[id] = false
		a.v.Route(worker.RoleAssign, recordmsg.ReturnLeftover{Split: id, Record: r.Rec, RecordRev: r.Rev})
		return
	}
	a.inflight[id] = !cand.Quarantine
	if !cand.Quarantine {
		a.claims++
	}
	a.v.Route(worker.RoleAssign, recordmsg.ClaimSplit{Candidate: cand, Record: r.Rec, RecordRev: r.Rev})
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
