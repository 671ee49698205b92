package actors

import (
	"context"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/messages"
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

// election is the leader actor's election part (docs/protocol.md,
// "Leadership"): the plan view it stands from, whether a leader key is
// seen, and the term it holds. Written by the leader actor only.
type election struct {
	plan    protocol.PlanRecord
	planRev uint64
	hasPlan bool
	// leaderSeen is when a leader key was last known to be in the store (a
	// watched or listed put, this worker's own win or landed renewal, a
	// lost Create); zero after a watched or listed delete. A key not seen
	// for a LeaseDuration has expired by its TTL, so the sighting lapses by
	// itself and needs no delete to clear it (seesLeader).
	leaderSeen time.Time
	electing   bool // a Create of the leader key is in flight
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
	renewals renewalClock
	renewing bool   // a renewal is in flight
	retries  uint64 // the round of the retry armed last; a retry of another round is moot
	failures failureRun
}

// working returns the lead the planner run and the publisher work under, or
// nil while there is none: not leading, not fenced yet, or the worker
// stopped working as leader (verdict, Depart).
func (l *leaderActor) working() *lead {
	if t := l.el.term; t != nil && !t.work.ended() {
		return t.work
	}
	return nil
}

func (l *leaderActor) canStand() bool {
	e := &l.el
	return l.phase.live && !l.seesLeader() && e.term == nil && !e.electing && !l.phase.over() && e.hasPlan &&
		(e.lastDemote.IsZero() || l.v.clk.Since(e.lastDemote) >= l.v.cfg.LeaseDuration/3) // a heartbeat interval (docs/protocol.md, "Leadership")
}

// seesLeader reports whether a leader key is believed to be in the store: it
// was seen less than a LeaseDuration ago, the TTL of a key nobody renews
// (docs/protocol.md, "Leadership"). A key created and gone while the watch
// was silent and no listing saw it therefore stops blocking this worker's
// elections by itself; a sighting that lapsed too early costs one lost
// Create at most.
func (l *leaderActor) seesLeader() bool {
	seen := l.el.leaderSeen
	return !seen.IsZero() && l.v.clk.Since(seen) < l.v.cfg.LeaseDuration
}

// sawLeader records that a leader key is in the store now.
func (l *leaderActor) sawLeader() { l.el.leaderSeen = l.v.clk.Now() }

// stand creates the leader key for the next generation.
func (l *leaderActor) stand(c *actor.Context) {
	l.el.electing = true
	v, pid, gen, nonce := l.v, c.PID(), l.el.plan.Generation+1, l.v.sessionNonce()
	v.goFunc(func(ctx context.Context) {
		oc, cancel := v.opCtx(ctx)
		defer cancel()
		at := v.clk.Now()
		rev, ok, err := v.st.Create(oc, store.Ephemeral, protocol.KeyLeader, protocol.EncodeLeader(protocol.LeaderRecord{Owner: v.id, Nonce: nonce, Generation: gen}))
		v.send(pid, electDone{outcome: judgeElection(ok, err), rev: uint64(rev), gen: gen, nonce: nonce, at: at, err: err})
	})
}

// elected starts a term when the Create won and fences its generation.
func (l *leaderActor) elected(c *actor.Context, m electDone) {
	l.el.electing = false
	switch m.outcome {
	case electFailed:
		if !l.v.fatalIf(m.err) {
			l.log.Warn("election failed; will retry", "err", m.err)
		}
		return
	case electLost:
		l.sawLeader() // another worker's key: no need to stand again before it is renewed or gone
		return
	}
	t := &term{lead: newLead(l.v.ctx, m.gen), nonce: m.nonce, rev: m.rev}
	l.el.term = t
	if l.phase.over() {
		l.resign(nil)
		return
	}
	t.renewals.restart(m.at)
	l.view.grace.Lead(l.v.clk.Now())
	l.sawLeader()
	l.v.met.leading(true)
	l.log.Info("became leader", "generation", m.gen)
	v, base, baseRev, fingerprint := l.v, l.el.plan, l.el.planRev, l.fingerprint
	t.lead.goFunc(v, c.PID(), func(ctx context.Context) any {
		return generationFence(ctx, v, t.lead.gen, base, baseRev, fingerprint)
	})
}

// fenced hands the lead to the planner run and the publisher once the
// fence landed.
func (l *leaderActor) fenced(c *actor.Context, m fenceDone) {
	switch m.step {
	case fenceFatal:
		l.v.fatalIf(m.err)
		return
	case fenceNewer:
		l.log.Warn("newer leader generation observed; stepping down", "generation", l.el.term.lead.gen)
		l.resign(nil)
		return
	}
	l.adoptPlan(c, m.plan, m.rev)
	if t := l.el.term; t != nil && !l.phase.over() {
		t.work = t.lead.child()
		l.view.indexPublished()
		l.pub.dirty = true
		l.runPlan(c)
	}
	l.tick(c)
}

// adoptPlan takes a newer plan record into the view; one of a newer
// generation ends this worker's leadership.
func (l *leaderActor) adoptPlan(c *actor.Context, pl protocol.PlanRecord, rev uint64) {
	e := &l.el
	if e.hasPlan && rev <= e.planRev {
		return
	}
	e.plan, e.planRev, e.hasPlan = pl, rev, true
	if e.term != nil && pl.Generation > e.term.lead.gen {
		l.log.Warn("newer leader generation observed; stepping down", "generation", e.term.lead.gen)
		l.resign(nil)
	}
	l.tick(c)
}

// keepLeading ends a term whose key went unrenewed for a LeaseDuration and
// renews it otherwise; called once per heartbeat.
func (l *leaderActor) keepLeading(c *actor.Context, now time.Time) {
	t := l.el.term
	switch {
	case t == nil:
	case now.Sub(t.renewals.lastOK) >= l.v.cfg.LeaseDuration:
		l.orphan("leader lease expired; stepping down")
	case !t.renewing:
		l.renew(c, t)
	}
}

func (l *leaderActor) renew(c *actor.Context, t *term) {
	t.renewing = true
	v, rev, nonce, pgen := l.v, t.rev, t.nonce, l.el.plan.Generation
	at := v.clk.Now()
	landed := t.renewals.sent(at) // a lost compare that finds our nonce proves a write sent no earlier than this landed
	t.lead.goFunc(v, c.PID(), func(ctx context.Context) any {
		return renewLeader(ctx, v, protocol.LeaderRecord{Owner: v.id, Nonce: nonce, Generation: pgen}, rev, at, landed)
	})
}

// renewLeader updates the leader key at rev to lr; after a lost compare it
// reads the key to learn whether an earlier renewal landed, and after a
// failed one (a timeout, a lost reply) it reads it back under a fresh bound
// to learn whether this one did (docs/protocol.md, "Leadership"), so a
// leader whose writes all land keeps its term with its watch down.
func renewLeader(ctx context.Context, v *env, lr protocol.LeaderRecord, rev uint64, at, landed time.Time) renewDone {
	oc, cancel := v.opCtx(ctx)
	defer cancel()
	r, ok, err := v.st.Update(oc, store.Ephemeral, protocol.KeyLeader, protocol.EncodeLeader(lr), store.Revision(rev))
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
func readLeader(ctx context.Context, v *env) (store.Entry, bool, protocol.LeaderRecord, error) {
	e, found, err := v.st.Get(ctx, store.Ephemeral, protocol.KeyLeader)
	var lr protocol.LeaderRecord
	if err == nil && found {
		lr, err = protocol.DecodeLeader(protocol.KeyLeader, e.Value)
	}
	return e, found, lr, err
}

// readBackLeader reads the leader key after a renewal at rev failed, under
// a fresh bound, and reports the revision at which it found a renewal of
// session nonce landed (readBackLanded, the presence's rule).
func readBackLeader(ctx context.Context, v *env, nonce string, rev uint64) (uint64, bool) {
	oc, cancel := v.readBackCtx(ctx)
	defer cancel()
	e, found, lr, err := readLeader(oc, v)
	return uint64(e.Revision), readBackLanded(nonce, rev, found, lr.Nonce, uint64(e.Revision), err)
}

func (l *leaderActor) renewed(c *actor.Context, m renewDone) {
	t := l.el.term
	t.renewing = false
	switch m.fate {
	case leaderRenewUnknown:
		if !l.v.fatalIf(m.err) {
			t.failures.failed(l.log, "leader renewal failed; will retry", m.err)
			t.retries++
			t.lead.after(l.v, renewRetryDelay(l.v.cfg.LeaseDuration), c.PID(), leaderRetryDue{round: t.retries})
		}
	case leaderRenewLost:
		l.orphan("leader renewal lost; stepping down")
	case leaderRenewed:
		t.rev = max(t.rev, m.rev)
		t.renewals.landed(m.at)
		t.failures.landed(l.log, "leader key renewed again")
		t.retries++ // a retry armed earlier is moot
		l.sawLeader()
	}
}

// retryRenewal renews the leader key again soon after a failed renewal
// (docs/protocol.md, "Leadership"), or steps down when it went unrenewed
// for a LeaseDuration; a retry made moot by a later outcome does nothing.
func (l *leaderActor) retryRenewal(c *actor.Context, m leaderRetryDue) {
	if t := l.el.term; t != nil && m.round == t.retries && !l.v.halted.Load() {
		l.keepLeading(c, l.v.clk.Now())
	}
}

func (l *leaderActor) leaderObserved(c *actor.Context, m messages.LeaderObserved) {
	l.sawLeader()
	t := l.el.term
	if t == nil {
		return
	}
	switch judgeLeaderPut(t.nonce, t.rev, m.Leader, m.Rev) {
	case sightingLost:
		l.orphan("leader renewal lost; stepping down")
	case sightingLanded:
		// A renewal of ours landed unseen: credit it from the oldest
		// renewal whose fate is unknown.
		t.rev = m.Rev
		t.renewals.proven(t.renewing)
	}
}

func (l *leaderActor) leaderDeleted(c *actor.Context, m messages.LeaderDeleted) {
	l.el.leaderSeen = time.Time{}
	if t := l.el.term; t != nil && judgeLeaderDelete(m.Synthesized, m.Rev, t.rev) {
		l.orphan("leader lease expired; stepping down")
	}
	l.tick(c)
}

// stepDown answers Depart's StepDown once the leader key is given up.
func (l *leaderActor) stepDown(c *actor.Context, m messages.StepDown) {
	l.phase.departed = true
	if l.el.term == nil {
		l.v.reply(m.ReplyTo, messages.StepDownReply{})
		return
	}
	l.resign(m.ReplyTo)
}

// orphan ends this leadership without touching the leader key, which
// expires by its TTL (etcd's Session.Orphan): the key is lost, gone, or
// could not be renewed.
func (l *leaderActor) orphan(why string) {
	t := l.el.term
	if t == nil {
		return
	}
	l.log.Warn(why, "generation", t.lead.gen)
	l.endLeadership()
}

// endLeadership ends the term: its lead, with it the work lead, and so
// every result still in flight.
func (l *leaderActor) endLeadership() {
	l.el.term.lead.end()
	l.el.term = nil
	l.el.lastDemote = l.v.clk.Now()
	l.v.met.leading(false)
	l.workEnded()
}

// stopWorking ends the work lead while the key is still held (verdict,
// Depart): no planner run, no publish from now on.
func (l *leaderActor) stopWorking() {
	if w := l.working(); w != nil {
		w.end()
		l.workEnded()
	}
}

// workEnded drops what the planner run and the publisher kept for the lead.
func (l *leaderActor) workEnded() {
	l.view.unindexPublished()
	l.run.reset()
	stopTimer(l.pub.hold)
	l.pub.hold = nil
}

// resign ends this leadership and deletes the leader key guarded by its
// revision (best-effort; etcd's Election.Resign), so a successor need not
// wait for the TTL; replyTo, when set, is answered once the delete resolved.
func (l *leaderActor) resign(replyTo *actor.PID) {
	rev := l.el.term.rev
	l.endLeadership()
	v := l.v
	v.goFunc(func(ctx context.Context) {
		oc, cancel := v.opCtx(ctx)
		_, _ = v.st.Delete(oc, store.Ephemeral, protocol.KeyLeader, store.Revision(rev))
		cancel()
		if replyTo != nil {
			v.reply(replyTo, messages.StepDownReply{})
		}
	})
}
