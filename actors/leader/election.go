package leader

import (
	"context"
	"log/slog"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/store"
)

// Results of the election's store I/O.
type (
	// electDone is the result of a Create of the leader key.
	electDone struct {
		outcome electOutcome
		rev     uint64
		gen     uint64
		nonce   string
		at      time.Time
		err     error
	}
	// fenceDone is the generation fence's result (fenceLanded, fenceNewer
	// or fenceFatal), delivered under the term's lead.
	fenceDone struct {
		step fenceStep
		plan protocol.PlanRecord
		rev  uint64
		err  error
	}
	// renewDone is one leader-key renewal's result, delivered under the
	// term's lead.
	renewDone struct {
		fate leaderRenewal
		rev  uint64
		at   time.Time // the send time it proves landed
		err  error
	}
	// leaderRetryDue is the retry of a failed leader-key renewal, armed
	// renewRetryDelay after it failed and delivered under the term's lead;
	// round tells a current retry from one a later outcome made moot.
	leaderRetryDue struct{ round uint64 }
)

// election is the leader actor's election (docs/protocol.md, "Leadership"):
// one component with its own state and one verb per store operation, as
// etcd's concurrency.Election, driven as client-go's leader elector is. It
// campaigns until a Create of the leader key wins (acquired), fences the
// plan generation, and then renews the key once per heartbeat (renew,
// renewed) until the key is lost (sighted, deleted), expires, or is given up
// (orphan, resign).
//
// It hands out the term's work lead once the fence landed (fenced): the
// planner run and the publisher work under it and nothing else. Whenever the
// work lead may have ended (the term ended, or retire), it calls stopped,
// as client-go calls OnStoppedLeading, so that they drop what they kept for
// it. Written by the leader actor only, which dispatches to it and keeps
// none of its bookkeeping.
type election struct {
	v       *worker.Env
	log     *slog.Logger
	stopped func() // the work lead may have ended: the planner run and the publisher drop their state

	// The plan view: the plan record the election stands from and fences.
	plan    protocol.PlanRecord
	planRev uint64
	hasPlan bool
	// leaderSeen is when a leader key was last known to be in the store (a
	// watched or listed put, this worker's own win or landed renewal, a
	// lost Create); zero after a watched or listed delete. A key not seen
	// for a LeaseDuration has expired by its TTL, so the sighting lapses by
	// itself and needs no delete to clear it (seesLeader).
	leaderSeen time.Time
	electing   bool   // a Create of the leader key is in flight
	session    string // this worker's session's nonce, as the lease last told (Env.Nonce, then SessionChanged)
	lastDemote time.Time
	term       *term // nil: not leading
}

// term is one won leader key. Its lead ends when the leadership does; the
// fence and the renewals run under it, so their results die with it.
type term struct {
	lead     *lead
	work     *lead  // handed to the planner run and the publisher once fenced; nil before
	nonce    string // the session nonce the key was won with
	rev      uint64 // the key's latest known revision
	renewals worker.RenewalClock
	renewing bool   // a renewal is in flight
	retries  uint64 // the round of the retry armed last; a retry of another round is moot
	failures worker.FailureRun
}

func newElection(v *worker.Env, log *slog.Logger, stopped func()) election {
	return election{v: v, log: log, stopped: stopped, session: v.Nonce}
}

// working returns the lead the planner run and the publisher work under, or
// nil while there is none: not leading, not fenced yet, or the worker
// stopped working as leader (verdict, Depart).
func (e *election) working() *lead {
	if t := e.term; t != nil && !t.work.ended() {
		return t.work
	}
	return nil
}

// canCampaign reports whether the election may stand now: it has a plan
// record to fence, sees no leader key, holds no term, has no Create in
// flight, and stepped down at least a heartbeat interval ago
// (docs/protocol.md, "Leadership"). The job's phase is the caller's to add.
func (e *election) canCampaign() bool {
	return !e.seesLeader() && e.term == nil && !e.electing && e.hasPlan &&
		(e.lastDemote.IsZero() || e.v.Clock.Since(e.lastDemote) >= e.v.Config.LeaseDuration/3)
}

// seesLeader reports whether a leader key is believed to be in the store: it
// was seen less than a LeaseDuration ago, the TTL of a key nobody renews
// (docs/protocol.md, "Leadership"). A key created and gone while the watch
// was silent and no listing saw it therefore stops blocking this worker's
// elections by itself; a sighting that lapsed too early costs one lost
// Create at most.
func (e *election) seesLeader() bool {
	seen := e.leaderSeen
	return !seen.IsZero() && e.v.Clock.Since(seen) < e.v.Config.LeaseDuration
}

// sawLeader records that a leader key is in the store now.
func (e *election) sawLeader() { e.leaderSeen = e.v.Clock.Now() }

// campaign creates the leader key for the next generation (etcd's
// Election.Campaign); the result comes back as electDone.
func (e *election) campaign() {
	e.electing = true
	v, pid, gen, nonce := e.v, e.v.PIDs.Leader, e.plan.Generation+1, e.session
	v.Go(func(ctx context.Context) {
		oc, cancel := v.OpCtx(ctx)
		defer cancel()
		at := v.Clock.Now()
		rev, ok, err := v.Store.Create(oc, store.Ephemeral, protocol.KeyLeader, protocol.EncodeLeader(protocol.LeaderRecord{Owner: v.ID, Nonce: nonce, Generation: gen}))
		v.Send(pid, electDone{outcome: judgeElection(ok, err), rev: uint64(rev), gen: gen, nonce: nonce, at: at, err: err})
	})
}

// acquired takes a Create's result. A won key starts a term; retired (the
// verdict is in or Depart began) gives it up at once, and otherwise the term
// fences its generation from the plan view, fingerprint being this worker's
// job. It reports whether a term started fencing.
func (e *election) acquired(m electDone, fingerprint string, retired bool) bool {
	e.electing = false
	switch m.outcome {
	case electFailed:
		if !e.v.FatalIf(m.err) {
			e.log.Warn("election failed; will retry", "err", m.err)
		}
		return false
	case electLost:
		e.sawLeader() // another worker's key: no need to stand again before it is renewed or gone
		return false
	}
	t := &term{lead: newLead(e.v.Ctx, m.gen), nonce: m.nonce, rev: m.rev}
	e.term = t
	if retired {
		e.resign(nil)
		return false
	}
	t.renewals.Restart(m.at)
	e.sawLeader()
	e.v.Metrics.Leading(true)
	e.log.Info("became leader", "generation", m.gen)
	v, base, baseRev := e.v, e.plan, e.planRev
	t.lead.goFunc(v, v.PIDs.Leader, func(ctx context.Context) any {
		return generationFence(ctx, v, t.lead.gen, base, baseRev, fingerprint)
	})
	return true
}

// fenced takes the generation fence's result, delivered under the term's
// lead, and hands out the work lead once the fence landed, unless retired;
// it returns nil otherwise (the fence failed, or a newer generation ended
// the term).
func (e *election) fenced(m fenceDone, retired bool) *lead {
	switch m.step {
	case fenceFatal:
		e.v.FatalIf(m.err)
		return nil
	case fenceNewer:
		e.log.Warn("newer leader generation observed; stepping down", "generation", e.term.lead.gen)
		e.resign(nil)
		return nil
	}
	e.observePlan(m.plan, m.rev)
	t := e.term
	if t == nil || retired {
		return nil
	}
	t.work = t.lead.child()
	return t.work
}

// observePlan takes a newer plan record into the plan view, and reports
// whether it was newer; one of a newer generation than the term's ends the
// term.
func (e *election) observePlan(pl protocol.PlanRecord, rev uint64) bool {
	if e.hasPlan && rev <= e.planRev {
		return false
	}
	e.plan, e.planRev, e.hasPlan = pl, rev, true
	if e.term != nil && pl.Generation > e.term.lead.gen {
		e.log.Warn("newer leader generation observed; stepping down", "generation", e.term.lead.gen)
		e.resign(nil)
	}
	return true
}

// planView returns the plan record the election last saw, its revision,
// and whether it has one.
func (e *election) planView() (protocol.PlanRecord, uint64, bool) {
	return e.plan, e.planRev, e.hasPlan
}

// planDeleted records that the plan record is gone.
func (e *election) planDeleted() { e.hasPlan = false }

// renew ends a term whose key went unrenewed for a LeaseDuration by now and
// renews the key otherwise (client-go's renew loop, one round per
// heartbeat); the result comes back under the term's lead as renewDone.
func (e *election) renew(now time.Time) {
	t := e.term
	switch {
	case t == nil:
	case now.Sub(t.renewals.LastOK) >= e.v.Config.LeaseDuration:
		e.orphan("leader lease expired; stepping down")
	case !t.renewing:
		t.renewing = true
		v, rev, nonce, pgen := e.v, t.rev, t.nonce, e.plan.Generation
		at := v.Clock.Now()
		landed := t.renewals.Sent(at) // a lost compare that finds our nonce proves a write sent no earlier than this landed
		t.lead.goFunc(v, v.PIDs.Leader, func(ctx context.Context) any {
			return renewLeader(ctx, v, protocol.LeaderRecord{Owner: v.ID, Nonce: nonce, Generation: pgen}, rev, at, landed)
		})
	}
}

// renewLeader updates the leader key at rev to lr; after a lost compare it
// reads the key to learn whether an earlier renewal landed, and after a
// failed one (a timeout, a lost reply) it reads it back under a fresh bound
// to learn whether this one did (docs/protocol.md, "Leadership"), so a
// leader whose writes all land keeps its term with its watch down.
func renewLeader(ctx context.Context, v *worker.Env, lr protocol.LeaderRecord, rev uint64, at, landed time.Time) renewDone {
	oc, cancel := v.OpCtx(ctx)
	defer cancel()
	r, ok, err := v.Store.Update(oc, store.Ephemeral, protocol.KeyLeader, protocol.EncodeLeader(lr), store.Revision(rev))
	switch fate := judgeLeaderUpdate(ok, err); {
	case fate == leaderRenewUnknown && coordination.KindOf(err) != coordination.Fatal:
		if got, ok := readBackLeader(ctx, v, lr.Nonce, rev); ok {
			return renewDone{fate: leaderRenewed, rev: got, at: landed}
		}
		return renewDone{fate: fate, err: err}
	case fate != leaderRenewRead:
		return renewDone{fate: fate, rev: uint64(r), at: at, err: err}
	}
	e, found, cur, err := readLeader(oc, v)
	fate, err := judgeLeaderRead(lr.Nonce, found, cur, err)
	return renewDone{fate: fate, rev: uint64(e.Revision), at: landed, err: err}
}

// readLeader reads and decodes the leader key; err is the read's or the
// decoding's error.
func readLeader(ctx context.Context, v *worker.Env) (store.Entry, bool, protocol.LeaderRecord, error) {
	e, found, err := v.Store.Get(ctx, store.Ephemeral, protocol.KeyLeader)
	var lr protocol.LeaderRecord
	if err == nil && found {
		lr, err = protocol.DecodeLeader(protocol.KeyLeader, e.Value)
	}
	return e, found, lr, err
}

// readBackLeader reads the leader key after a renewal at rev failed, under
// a fresh bound, and reports the revision at which it found a renewal of
// session nonce landed (readBackLanded, the presence's rule).
func readBackLeader(ctx context.Context, v *worker.Env, nonce string, rev uint64) (uint64, bool) {
	oc, cancel := v.ReadBackCtx(ctx)
	defer cancel()
	e, found, lr, err := readLeader(oc, v)
	return uint64(e.Revision), worker.ReadBackLanded(nonce, rev, found, lr.Nonce, uint64(e.Revision), err)
}

// renewed takes a renewal's result, delivered under the term's lead.
func (e *election) renewed(m renewDone) {
	t := e.term
	t.renewing = false
	switch m.fate {
	case leaderRenewUnknown:
		if !e.v.FatalIf(m.err) {
			t.failures.Failed(e.log, "leader renewal failed; will retry", m.err)
			t.retries++
			t.lead.after(e.v, worker.RenewRetryDelay(e.v.Config.LeaseDuration), e.v.PIDs.Leader, leaderRetryDue{round: t.retries})
		}
	case leaderRenewLost:
		e.orphan("leader renewal lost; stepping down")
	case leaderRenewed:
		t.rev = max(t.rev, m.rev)
		t.renewals.Landed(m.at)
		t.failures.Landed(e.log, "leader key renewed again")
		t.retries++ // a retry armed earlier is moot
		e.sawLeader()
	}
}

// retried renews the leader key again soon after a failed renewal
// (docs/protocol.md, "Leadership"), or steps down when it went unrenewed
// for a LeaseDuration; a retry made moot by a later outcome does nothing.
func (e *election) retried(m leaderRetryDue) {
	if t := e.term; t != nil && m.round == t.retries && !e.v.Halted() {
		e.renew(e.v.Clock.Now())
	}
}

// sighted takes a watched or listed put of the leader key.
func (e *election) sighted(m recordmsg.LeaderChanged) {
	e.sawLeader()
	t := e.term
	if t == nil {
		return
	}
	switch judgeLeaderPut(t.nonce, t.rev, m.Leader, m.Rev) {
	case sightingLost:
		e.orphan("leader renewal lost; stepping down")
	case sightingLanded:
		// A renewal of ours landed unseen: credit it from the oldest
		// renewal whose fate is unknown.
		t.rev = m.Rev
		t.renewals.Proven(t.renewing)
	}
}

// deleted takes a watched or listed delete of the leader key.
func (e *election) deleted(m recordmsg.LeaderChanged) {
	e.leaderSeen = time.Time{}
	if t := e.term; t != nil && judgeLeaderDelete(m.Synthesized, m.Rev, t.rev) {
		e.orphan("leader lease expired; stepping down")
	}
}

// stepDown answers Depart's StepDown once the leader key is given up.
func (e *election) stepDown(m wire.StepDown) {
	if e.term == nil {
		e.v.Reply(m.ReplyTo, wire.StepDownReply{})
		return
	}
	e.resign(m.ReplyTo)
}

// retire ends the work lead while the key is still held (verdict, Depart):
// no planner run, no publish from now on.
func (e *election) retire() {
	if w := e.working(); w != nil {
		w.end()
		e.stopped()
	}
}

// stop ends the term's lead when the actor stops, so that no work of it
// outlives the actor.
func (e *election) stop() {
	if t := e.term; t != nil {
		t.lead.end()
	}
}

// orphan ends this leadership without touching the leader key, which
// expires by its TTL (etcd's Session.Orphan): the key is lost, gone, or
// could not be renewed.
func (e *election) orphan(why string) {
	t := e.term
	if t == nil {
		return
	}
	e.log.Warn(why, "generation", t.lead.gen)
	e.end()
}

// end ends the term: its lead, with it the work lead, and so every result
// still in flight.
func (e *election) end() {
	e.term.lead.end()
	e.term = nil
	e.lastDemote = e.v.Clock.Now()
	e.v.Metrics.Leading(false)
	e.stopped()
}

// resign ends this leadership and deletes the leader key guarded by its
// revision (best-effort; etcd's Election.Resign), so a successor need not
// wait for the TTL; replyTo, when set, is answered once the delete resolved.
func (e *election) resign(replyTo *actor.PID) {
	rev := e.term.rev
	e.end()
	v := e.v
	v.Go(func(ctx context.Context) {
		oc, cancel := v.OpCtx(ctx)
		_, _ = v.Store.Delete(oc, store.Ephemeral, protocol.KeyLeader, store.Revision(rev))
		cancel()
		if replyTo != nil {
			v.Reply(replyTo, wire.StepDownReply{})
		}
	})
}
