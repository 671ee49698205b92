package actors

import (
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/messages"
)

type leaseEntry struct {
	lease protocol.LeaseRecord
	rev   uint64
}

// assign follows this worker's assignment record (§16): it keeps the claim
// view (records, specs, leases), picks claim candidates for assigned splits
// under MaxInFlight, runs the quarantine scan (§19.2) through an incremental
// index, and tells the revoke actor the assigned set.
type assign struct {
	v   *env
	log *slog.Logger

	records map[coordination.SplitID]recEntry
	specs   map[coordination.SplitID]protocol.SpecRecord
	leases  map[coordination.SplitID]leaseEntry

	held     map[coordination.SplitID]uint64
	inflight map[coordination.SplitID]bool
	handing  map[coordination.SplitID]uint64 // surrendered, its write not resolved yet
	cooldown map[coordination.SplitID]bool   // gave up; retry at the next heartbeat or change
	quarCand map[coordination.SplitID]bool   // index of quarantine candidates

	decided    bool
	appliedGen uint64
	assigned   map[coordination.SplitID]bool
	named      map[coordination.SplitID]time.Time // first named while not held (§16.6)

	live     bool
	verdict  bool
	departed bool
}

func newAssign(v *env) actor.Producer {
	return func() actor.Receiver {
		return &assign{
			v:        v,
			log:      v.log.With("actor", "assign"),
			records:  map[coordination.SplitID]recEntry{},
			specs:    map[coordination.SplitID]protocol.SpecRecord{},
			leases:   map[coordination.SplitID]leaseEntry{},
			held:     map[coordination.SplitID]uint64{},
			inflight: map[coordination.SplitID]bool{},
			handing:  map[coordination.SplitID]uint64{},
			cooldown: map[coordination.SplitID]bool{},
			quarCand: map[coordination.SplitID]bool{},
			assigned: map[coordination.SplitID]bool{},
			named:    map[coordination.SplitID]time.Time{},
		}
	}
}

// Receive handles one message.
func (a *assign) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized, actor.Started, actor.Stopped:
	case messages.JobStarted:
	case messages.RecordObserved:
		if old, ok := a.records[m.Split]; ok && m.Rev <= old.rev {
			return
		}
		a.records[m.Split] = recEntry{rec: m.Record, rev: m.Rev}
		a.changed(c, m.Split)
	case messages.RecordDeleted:
		delete(a.records, m.Split)
		a.changed(c, m.Split)
	case messages.SpecObserved:
		if _, ok := a.specs[m.Split]; !ok {
			a.specs[m.Split] = m.Spec
			a.changed(c, m.Split)
		}
	case messages.LeaseObserved:
		a.leases[m.Split] = leaseEntry{lease: m.Lease, rev: m.Rev}
		a.changed(c, m.Split)
	case messages.LeaseDeleted:
		delete(a.leases, m.Split)
		a.changed(c, m.Split)
	case messages.AssignmentObserved:
		if m.Assignment.Generation < a.appliedGen {
			return
		}
		a.appliedGen = m.Assignment.Generation
		a.decided = true
		set := make(map[coordination.SplitID]bool, len(m.Assignment.Splits))
		now := a.v.clk.Now()
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
		a.assigned = set
		c.Send(a.v.pid.revoke, messages.AssignedSetChanged{Decided: true, Splits: append([]coordination.SplitID(nil), m.Assignment.Splits...)})
		a.step(c)
	case messages.AssignmentDeleted:
		a.decided = false
		a.assigned = map[coordination.SplitID]bool{}
		a.named = map[coordination.SplitID]time.Time{}
		c.Send(a.v.pid.revoke, messages.AssignedSetChanged{})
	case messages.TenancyStarted:
		a.held[m.Split] = m.Epoch
		delete(a.inflight, m.Split)
		if t, ok := a.named[m.Split]; ok {
			a.v.met.latency(a.v.clk.Since(t))
			delete(a.named, m.Split)
		}
		a.index(m.Split)
		a.step(c)
	case messages.TenancyEnded:
		if e, ok := a.held[m.Split]; ok && e == m.Epoch {
			delete(a.held, m.Split)
			if m.Reason != messages.EndFenced && m.Reason != messages.EndStarved {
				a.handing[m.Split] = m.Epoch
			}
			if a.assigned[m.Split] {
				a.named[m.Split] = a.v.clk.Now()
			}
			a.index(m.Split)
			a.step(c)
		}
	case messages.HandBackResolved:
		if e, ok := a.handing[m.Split]; ok && e == m.Epoch {
			delete(a.handing, m.Split)
			a.changed(c, m.Split)
		}
	case messages.ClaimAbandoned:
		delete(a.inflight, m.Split)
		a.cooldown[m.Split] = true
		a.step(c)
	case messages.HeartbeatTicked:
		clear(a.cooldown)
		a.step(c)
	case messages.WatchesChanged:
		a.live = m.Live
		a.step(c)
	case messages.VerdictReached:
		a.verdict = true
	case messages.Departing:
		a.departed = true
	default:
		a.log.Warn("unknown message", "type", fmt.Sprintf("%T", m))
	}
}

func (a *assign) input(id coordination.SplitID) (protocol.CandidateInput, bool) {
	r, ok := a.records[id]
	if !ok {
		return protocol.CandidateInput{}, false
	}
	_, hasSpec := a.specs[id]
	_, held := a.held[id]
	in := protocol.CandidateInput{Record: r.rec, HasSpec: hasSpec, Held: held, Me: a.v.id, MyNonce: a.v.nonce, MaxAttempts: a.v.cfg.MaxAttempts}
	if l, ok := a.leases[id]; ok {
		lr := l.lease
		in.Lease = &lr
	}
	return in, true
}

// index keeps the quarantine-candidate index current for one split.
func (a *assign) index(id coordination.SplitID) {
	in, ok := a.input(id)
	if !ok {
		delete(a.quarCand, id)
		return
	}
	if cand, ok := protocol.Classify(in); ok && cand.Quarantine {
		a.quarCand[id] = true
	} else {
		delete(a.quarCand, id)
	}
}

// changed re-evaluates after an observation of split id. A split whose
// claim gave up stays cooling down until the next heartbeat (§16.4: a lost
// or failed claim retries then), so a view that keeps losing cannot spin.
func (a *assign) changed(c *actor.Context, id coordination.SplitID) {
	a.index(id)
	if a.assigned[id] || a.quarCand[id] {
		a.step(c)
	}
}

// step starts the claims and quarantines the view allows (§16.2, §16.3).
func (a *assign) step(c *actor.Context) {
	if !a.live || a.verdict || a.departed || a.v.halted.Load() {
		return
	}
	for id := range a.quarCand {
		if _, busy := a.handing[id]; !busy && !a.inflight[id] && !a.cooldown[id] {
			a.launch(c, id)
		}
	}
	if !a.decided {
		return
	}
	slots := a.v.cfg.MaxInFlight - len(a.held) - len(a.inflight)
	if slots <= 0 {
		return
	}
	var cands []protocol.Candidate
	for id := range a.assigned {
		if _, busy := a.handing[id]; busy || a.inflight[id] || a.cooldown[id] {
			continue
		}
		in, ok := a.input(id)
		if !ok {
			continue
		}
		if cand, ok := protocol.Classify(in); ok && !cand.Quarantine {
			cands = append(cands, cand)
		}
	}
	sort.Slice(cands, func(i, j int) bool { return protocol.CandidateLess(cands[i], cands[j]) })
	for _, cand := range cands[:min(slots, len(cands))] {
		a.launch(c, cand.ID)
	}
}

func (a *assign) launch(c *actor.Context, id coordination.SplitID) {
	in, ok := a.input(id)
	if !ok {
		return
	}
	cand, ok := protocol.Classify(in)
	if !ok {
		return
	}
	a.inflight[id] = true
	msg := messages.ClaimSplit{Candidate: cand, Record: in.Record, RecordRev: a.records[id].rev}
	if l, ok := a.leases[id]; ok {
		msg.LeaseRev = l.rev
	}
	if s, ok := a.specs[id]; ok {
		msg.Spec, msg.HasSpec = s.Spec(), true
	}
	c.Send(a.v.pid.lease, msg)
}
