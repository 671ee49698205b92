package actors

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/messages"
	"github.com/spate-go/coordination/store"
)

// Messages the leader actor sends itself.
type (
	electDone struct {
		rev   uint64
		gen   uint64
		nonce string
		at    time.Time
		err   error
	}
	fenceDone struct {
		gen    uint64
		plan   protocol.PlanRecord
		rev    uint64
		ok     bool
		demote bool
		err    error
	}
	renewDone struct {
		gen  uint64
		rev  uint64
		at   time.Time
		lost bool
		err  error
	}
	planDone struct {
		gen      uint64
		outcome  string // ok, noop, error, fatal, lost, discarded
		plan     protocol.PlanRecord
		rev      uint64
		created  int
		err      error
		took     time.Duration
		finalize bool
	}
	replanDue struct{ gen uint64 }
	// seedProgressed reports that a planner run of leadership gen seeded
	// another seedReport splits.
	seedProgressed struct{ gen uint64 }
	publishDue     struct{}
	publishDone    struct {
		gen     uint64
		written []assignCache
		lost    []assignCache // the cache entry each lost write was based on (rev 0: a Create)
		deleted []string
		failed  bool
		moved   int
		members string
	}
)

type assignCache struct {
	inst string
	rec  protocol.AssignmentRecord
	rev  uint64
}

type splitFacts struct {
	owner  string
	status protocol.Status
	weight uint64
	seen   bool
}

// leader runs the election and generation fence (docs/protocol.md, "Leadership"), the planner with
// seeding and publish (docs/protocol.md, "Planning"), and computes and publishes the assignment
// records (docs/protocol.md, "Assignment and the rebalance delay"), keeping its own fleet view.
type leader struct {
	v   *env
	log *slog.Logger

	planner     coordination.Planner
	fingerprint string

	live, verdict, departed bool

	leading    bool
	nonce      string // the session nonce this leadership was won with
	gen        uint64
	leaderRev  uint64
	renewals   renewalClock // the leader key's liveness
	electing   bool
	renewing   bool
	lastDemote time.Time
	obsLeader  bool

	plan    protocol.PlanRecord
	planRev uint64
	hasPlan bool

	members     map[string]uint32
	departedAt  map[string]time.Time
	records     map[coordination.SplitID]splitFacts
	assigns     map[string]assignCache
	publishedTo map[coordination.SplitID]string // split → the member whose cached assignment names it
	grace       *protocol.Grace                 // the startup grace window's observations

	planning   bool
	planCancel context.CancelFunc
	planDue    bool
	planFailed bool
	replan     *clock.Timer

	publishing   bool
	publishSoon  bool // a publishDue is queued
	dirty        bool
	announced    string // member set of the last "assignment published" log
	publishRetry bool
	lostStreak   int // consecutive publishes with a lost write
}

func newLeader(v *env) actor.Producer {
	return func() actor.Receiver {
		return &leader{
			v:           v,
			log:         v.log.With("actor", "leader"),
			members:     map[string]uint32{},
			departedAt:  map[string]time.Time{},
			records:     map[coordination.SplitID]splitFacts{},
			assigns:     map[string]assignCache{},
			publishedTo: map[coordination.SplitID]string{},
			grace:       protocol.NewGrace(v.cfg.StartupGrace),
		}
	}
}

// Receive handles one message.
func (l *leader) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized, actor.Started:
	case actor.Stopped:
		stopTimer(l.replan)
		if l.planCancel != nil {
			l.planCancel()
		}
	case messages.JobStarted:
		l.planner, l.fingerprint = m.Planner, m.Fingerprint
	case messages.WatchesChanged:
		l.live = m.Live
		if m.Live {
			l.dirty = true
		}
		l.tick(c)
	case messages.Reconciled:
		l.dirty = true
		l.tick(c)
	case messages.HeartbeatTicked:
		l.heartbeat(c)
	case messages.LeaderObserved:
		l.obsLeader = true
		if l.leading {
			if m.Leader.Nonce != l.nonce {
				l.stopLeading(c, "leader renewal lost; stepping down", false)
			} else if m.Rev > l.leaderRev {
				// A renewal of ours landed unseen: credit it from the
				// oldest renewal whose fate is unknown.
				l.leaderRev = m.Rev
				l.renewals.proven(l.renewing)
			}
		}
	case messages.LeaderDeleted:
		l.obsLeader = false
		if l.leading && (m.Synthesized || m.Rev > l.leaderRev) {
			l.stopLeading(c, "leader lease expired; stepping down", false)
		}
		l.tick(c)
	case messages.PlanObserved:
		l.adoptPlan(c, m.Plan, m.Rev)
	case messages.PlanDeleted:
		l.hasPlan = false
	case messages.PresenceObserved:
		if _, ok := l.members[m.Instance]; !ok && m.Instance != l.v.id {
			l.log.Info("peer joined", "peer", m.Instance, "live", len(l.members)+1)
		}
		if old, ok := l.members[m.Instance]; !ok || old != m.MaxInFlight {
			l.dirty = true
		}
		l.members[m.Instance] = m.MaxInFlight
		l.grace.Join(m.Instance, l.v.clk.Now())
		delete(l.departedAt, m.Instance)
		l.gauges()
		l.tick(c)
	case messages.PresenceDeleted:
		if _, ok := l.members[m.Instance]; ok {
			delete(l.members, m.Instance)
			l.grace.Leave(m.Instance)
			if m.Instance != l.v.id {
				l.log.Info("peer left", "peer", m.Instance, "live", len(l.members))
				if l.v.cfg.RebalanceDelay > 0 {
					if _, ok := l.departedAt[m.Instance]; !ok {
						l.departedAt[m.Instance] = l.v.clk.Now()
					}
				}
			}
			l.dirty = true
			l.gauges()
			l.tick(c)
		}
	case messages.RecordObserved:
		old := l.records[m.Split]
		f := splitFacts{owner: m.Record.Owner, status: m.Record.Status, weight: m.Record.Weight, seen: true}
		l.grace.Claim(m.Split, m.Record.Owner, l.v.clk.Now())
		if old != f {
			l.records[m.Split] = f
			if !old.seen {
				l.seen(c)
			} else if l.inputChanged(m.Split, old, f) {
				l.dirty = true
				l.tick(c)
			}
		}
	case messages.RecordDeleted:
		delete(l.records, m.Split)
		l.grace.Release(m.Split)
		l.dirty = true
		l.tick(c)
	case seedProgressed:
		if m.gen == l.gen {
			l.tick(c)
		}
	case messages.AssignmentObserved:
		if old, ok := l.assigns[m.Instance]; !ok || m.Rev > old.rev {
			l.cacheAssign(assignCache{inst: m.Instance, rec: m.Assignment, rev: m.Rev})
		}
	case messages.AssignmentDeleted:
		if old, ok := l.assigns[m.Instance]; ok && m.Rev > old.rev {
			l.uncacheAssign(m.Instance)
		}
	case messages.SessionEnded:
		l.stopLeading(c, "session ended; stepping down", false)
	case messages.SessionStarted:
		l.tick(c)
	case messages.VerdictReached:
		l.verdict = true
		if l.planCancel != nil {
			l.planCancel()
		}
	case messages.Departing:
		l.departed = true
	case messages.StepDown:
		l.departed = true
		if !l.leading {
			c.Send(m.ReplyTo, messages.StepDownReply{})
			return
		}
		l.demote(c, m.ReplyTo)
	case electDone:
		l.elected(c, m)
	case fenceDone:
		l.fenced(c, m)
	case renewDone:
		l.renewed(c, m)
	case planDone:
		l.planned(c, m)
	case replanDue:
		if l.leading && m.gen == l.gen && !l.verdict {
			l.runPlan(c)
		}
	case publishDue:
		l.publishSoon = false
		l.publish(c)
	case publishDone:
		l.published(c, m)
	default:
		l.log.Warn("unknown message", "type", fmt.Sprintf("%T", m))
	}
}

// seen marks the assignment input changed by a split or spec that
// appeared. While this leader's own planner run seeds, it waits for the
// run's progress reports instead of evaluating per split, so seeding n
// splits costs n/seedReport evaluations, not n.
func (l *leader) seen(c *actor.Context) {
	l.dirty = true
	if !l.planning {
		l.tick(c)
	}
}

// inputChanged reports whether a split record change from old to f changes
// an input of the assignment function: its status, its owner as the sticky
// pass sees it (an unowned split counts as its published member's), or a
// rebalance window's reservation. A claim by the member a split is published
// to changes nothing, so a claim storm costs the leader no evaluation.
func (l *leader) inputChanged(id coordination.SplitID, old, f splitFacts) bool {
	if old.status != f.status || !old.seen {
		return true
	}
	if old.owner == f.owner {
		return false
	}
	if _, ok := l.departedAt[old.owner]; ok {
		return true
	}
	if _, ok := l.departedAt[f.owner]; ok {
		return true
	}
	return l.stickyOwner(id, old.owner) != l.stickyOwner(id, f.owner)
}

// stickyOwner is split id's owner for the sticky pass when its record names
// owner: the owner, or while it has none the live member whose published
// assignment names the split (a documented refinement of the assignment
// input, docs/protocol.md "Assignment and the rebalance delay").
func (l *leader) stickyOwner(id coordination.SplitID, owner string) string {
	if owner != "" {
		return owner
	}
	if p, ok := l.publishedTo[id]; ok {
		if _, live := l.members[p]; live {
			return p
		}
	}
	return ""
}

// cacheAssign caches a member's assignment record and, while leading, its
// placements (publishedTo is rebuilt when leadership starts, so a worker
// that does not lead pays nothing per split for others' records).
func (l *leader) cacheAssign(a assignCache) {
	l.uncacheAssign(a.inst)
	l.assigns[a.inst] = a
	if l.leading {
		for _, id := range a.rec.Splits {
			l.publishedTo[id] = a.inst
		}
	}
}

// uncacheAssign drops a member's cached assignment record.
func (l *leader) uncacheAssign(inst string) {
	old, ok := l.assigns[inst]
	if !ok {
		return
	}
	delete(l.assigns, inst)
	if l.leading {
		for _, id := range old.rec.Splits {
			if l.publishedTo[id] == inst {
				delete(l.publishedTo, id)
			}
		}
	}
}

// indexPublished rebuilds publishedTo from the cached records.
func (l *leader) indexPublished() {
	clear(l.publishedTo)
	for inst, a := range l.assigns {
		for _, id := range a.rec.Splits {
			l.publishedTo[id] = inst
		}
	}
}

func (l *leader) gauges() {
	n := len(l.members)
	if _, ok := l.members[l.v.id]; !ok {
		n++
	}
	l.v.met.workers(n)
}

func (l *leader) heartbeat(c *actor.Context) {
	now := l.v.clk.Now()
	if l.leading {
		if now.Sub(l.renewals.lastOK) >= l.v.cfg.LeaseDuration {
			l.stopLeading(c, "leader lease expired; stepping down", false)
		} else if !l.renewing {
			l.renew(c)
		}
	}
	for i, t := range l.departedAt {
		if now.Sub(t) >= l.v.cfg.RebalanceDelay {
			delete(l.departedAt, i)
			l.dirty = true
		}
	}
	if l.publishRetry || l.grace.Due(now) {
		l.publishRetry = false
		l.dirty = true
	}
	if l.leading && l.planFailed && !l.planning {
		l.runPlan(c)
	}
	l.tick(c)
}

// tick stands for election or publishes when due.
func (l *leader) tick(c *actor.Context) {
	if l.v.halted.Load() {
		return
	}
	if l.canStand() {
		l.stand(c)
	}
	l.schedulePublish(c)
}

// schedulePublish queues one evaluation behind the messages already in the
// inbox, so an evaluation sees a whole burst of watch events rather than a
// half-applied view; triggers meanwhile coalesce into it.
func (l *leader) schedulePublish(c *actor.Context) {
	if l.dirty && !l.publishSoon && !l.publishing {
		l.publishSoon = true
		c.Send(c.PID(), publishDue{})
	}
}

func (l *leader) canStand() bool {
	return l.live && !l.obsLeader && !l.leading && !l.electing && !l.departed && !l.verdict && l.hasPlan &&
		(l.lastDemote.IsZero() || l.v.clk.Since(l.lastDemote) >= l.v.cfg.LeaseDuration/3) // a heartbeat interval (docs/protocol.md, "Leadership")
}

func (l *leader) stand(c *actor.Context) {
	l.electing = true
	v, pid, gen, nonce := l.v, c.PID(), l.plan.Generation+1, l.v.sessionNonce()
	v.goFunc(func(ctx context.Context) {
		oc, cancel := v.opCtx(ctx)
		defer cancel()
		at := v.clk.Now()
		rev, ok, err := v.st.Create(oc, store.Ephemeral, protocol.KeyLeader, protocol.EncodeLeader(protocol.LeaderRecord{Owner: v.id, Nonce: nonce, Generation: gen}))
		if !ok {
			rev = 0
		}
		v.send(pid, electDone{rev: uint64(rev), gen: gen, nonce: nonce, at: at, err: err})
	})
}

func (l *leader) elected(c *actor.Context, m electDone) {
	l.electing = false
	if m.err != nil {
		if !l.v.fatalIf(m.err) {
			l.log.Warn("election failed; will retry", "err", m.err)
		}
		return
	}
	if m.rev == 0 {
		return
	}
	if l.departed || l.verdict {
		l.leading, l.leaderRev, l.gen, l.nonce = true, m.rev, m.gen, m.nonce
		l.demote(c, nil)
		return
	}
	l.leading, l.gen, l.leaderRev, l.nonce = true, m.gen, m.rev, m.nonce
	l.renewals.restart(m.at)
	l.grace.Lead(l.v.clk.Now())
	l.obsLeader = true
	l.v.met.leading(true)
	l.indexPublished()
	l.log.Info("became leader", "generation", m.gen)
	v, pid, base, baseRev, gen, fingerprint := l.v, c.PID(), l.plan, l.planRev, m.gen, l.fingerprint
	v.goFunc(func(ctx context.Context) {
		v.send(pid, generationFence(ctx, v, gen, base, baseRev, fingerprint))
	})
}

// planMissing is the Fatal of an operation that needs the plan record after
// it was deleted outside the library (docs/protocol.md, "Watches and reconcile").
var planMissing = &coordination.Error{Kind: coordination.Fatal, Reason: "plan record is missing; it was deleted outside the library"}

// generationFence CASes the plan record to generation gen (docs/protocol.md, "Leadership").
func generationFence(ctx context.Context, v *env, gen uint64, base protocol.PlanRecord, rev uint64, fingerprint string) fenceDone {
	for try := 0; try < 3; try++ {
		if base.Generation >= gen {
			return fenceDone{gen: gen, demote: true}
		}
		want := base
		want.Generation = gen
		want.UpdatedAtMs = v.nowMs()
		oc, cancel := v.opCtx(ctx)
		r, ok, err := v.st.Update(oc, store.Durable, protocol.KeyPlan, protocol.EncodePlan(want), store.Revision(rev))
		if err != nil {
			cancel()
			if coordination.KindOf(err) == coordination.Fatal {
				return fenceDone{gen: gen, err: err}
			}
			continue
		}
		if ok {
			cancel()
			return fenceDone{gen: gen, ok: true, plan: want, rev: uint64(r)}
		}
		e, found, err := v.st.Get(oc, store.Durable, protocol.KeyPlan)
		cancel()
		if err != nil {
			continue
		}
		if !found {
			return fenceDone{gen: gen, err: planMissing}
		}
		pl, err := protocol.DecodePlan(protocol.KeyPlan, e.Value)
		if err != nil {
			return fenceDone{gen: gen, err: err}
		}
		if pl.Fingerprint != fingerprint {
			return fenceDone{gen: gen, err: protocol.FingerprintMismatch(pl.Fingerprint, fingerprint)}
		}
		base, rev = pl, uint64(e.Revision)
	}
	return fenceDone{gen: gen, demote: true}
}

func (l *leader) fenced(c *actor.Context, m fenceDone) {
	if !l.leading || m.gen != l.gen {
		return
	}
	if m.err != nil {
		l.v.fatalIf(m.err)
		return
	}
	if m.demote {
		l.log.Warn("newer leader generation observed; stepping down", "generation", m.gen)
		l.demote(c, nil)
		return
	}
	l.adoptPlan(c, m.plan, m.rev)
	l.dirty = true
	l.runPlan(c)
	l.tick(c)
}

func (l *leader) adoptPlan(c *actor.Context, pl protocol.PlanRecord, rev uint64) {
	if l.hasPlan && rev <= l.planRev {
		return
	}
	l.plan, l.planRev, l.hasPlan = pl, rev, true
	if l.leading && pl.Generation > l.gen {
		l.stopLeading(c, "newer leader generation observed; stepping down", true)
	}
	l.tick(c)
}

func (l *leader) renew(c *actor.Context) {
	l.renewing = true
	v, pid, gen, rev, nonce := l.v, c.PID(), l.gen, l.leaderRev, l.nonce
	pgen := l.plan.Generation
	at := v.clk.Now()
	landed := l.renewals.sent(at)
	v.goFunc(func(ctx context.Context) {
		oc, cancel := v.opCtx(ctx)
		defer cancel()
		r, ok, err := v.st.Update(oc, store.Ephemeral, protocol.KeyLeader, protocol.EncodeLeader(protocol.LeaderRecord{Owner: v.id, Nonce: nonce, Generation: pgen}), store.Revision(rev))
		if err != nil || ok {
			v.send(pid, renewDone{gen: gen, rev: uint64(r), at: at, err: err})
			return
		}
		e, found, err := v.st.Get(oc, store.Ephemeral, protocol.KeyLeader)
		if err != nil {
			v.send(pid, renewDone{gen: gen, err: err})
			return
		}
		if found {
			if lr, err := protocol.DecodeLeader(protocol.KeyLeader, e.Value); err != nil {
				v.send(pid, renewDone{gen: gen, err: err})
				return
			} else if lr.Nonce == nonce {
				// An earlier renewal landed: it was sent no earlier than landed.
				v.send(pid, renewDone{gen: gen, rev: uint64(e.Revision), at: landed})
				return
			}
		}
		v.send(pid, renewDone{gen: gen, lost: true})
	})
}

func (l *leader) renewed(c *actor.Context, m renewDone) {
	l.renewing = false
	if !l.leading || m.gen != l.gen {
		return
	}
	switch {
	case m.err != nil:
		if !l.v.fatalIf(m.err) {
			l.log.Warn("leader renewal failed; will retry", "err", m.err)
		}
	case m.lost:
		l.stopLeading(c, "leader renewal lost; stepping down", false)
	default:
		if m.rev > l.leaderRev {
			l.leaderRev = m.rev
		}
		l.renewals.landed(m.at)
	}
}

// stopLeading ends this leadership; with del it also deletes the leader key
// guarded by its revision.
func (l *leader) stopLeading(c *actor.Context, why string, del bool) {
	if !l.leading {
		return
	}
	l.log.Warn(why, "generation", l.gen)
	if del {
		l.demote(c, nil)
		return
	}
	l.endLeadership()
}

func (l *leader) endLeadership() {
	l.leading = false
	clear(l.publishedTo)
	l.lastDemote = l.v.clk.Now()
	l.v.met.leading(false)
	if l.planCancel != nil {
		l.planCancel()
		l.planCancel = nil
	}
	stopTimer(l.replan)
	l.planFailed, l.planDue = false, false
}

// demote stops leading and deletes the leader key guarded by its revision
// (best-effort); replyTo, when set, is answered once the delete resolved.
func (l *leader) demote(c *actor.Context, replyTo *actor.PID) {
	rev := l.leaderRev
	l.endLeadership()
	v := l.v
	v.goFunc(func(ctx context.Context) {
		oc, cancel := v.opCtx(ctx)
		_, _ = v.st.Delete(oc, store.Ephemeral, protocol.KeyLeader, store.Revision(rev))
		cancel()
		if replyTo != nil {
			v.send(replyTo, messages.StepDownReply{})
		}
	})
}

// runPlan starts a planner run (docs/protocol.md, "Planning"), or marks one due after the current.
func (l *leader) runPlan(c *actor.Context) {
	if !l.leading || l.verdict || l.departed {
		return
	}
	if l.planning {
		l.planDue = true
		return
	}
	l.planning, l.planDue = true, false
	ctx, cancel := context.WithCancel(l.v.ctx)
	l.planCancel = cancel
	v, pid, planner, gen, base, rev := l.v, c.PID(), l.planner, l.gen, l.plan, l.planRev
	known := make(map[coordination.SplitID]bool, len(l.records))
	for id := range l.records {
		known[id] = true
	}
	v.goFunc(func(context.Context) {
		defer cancel()
		report := func() { v.send(pid, seedProgressed{gen: gen}) }
		v.send(pid, planRun(ctx, v, planner, gen, base, rev, known, report))
	})
}

func (l *leader) planned(c *actor.Context, m planDone) {
	l.planning = false
	if !l.leading || m.gen != l.gen || m.outcome == "discarded" {
		return
	}
	l.planCancel = nil
	switch m.outcome {
	case "fatal":
		l.v.fatalIf(m.err)
		return
	case "lost":
		l.v.met.replan("error", m.took)
		l.log.Warn("plan publish lost to a newer leader; stepping down", "generation", l.gen)
		l.demote(c, nil)
		return
	case "error":
		l.v.met.replan("error", m.took)
		l.planFailed = true
		if m.err != nil {
			l.log.Warn("planner run failed; will retry", "err", m.err)
		}
		return
	}
	l.planFailed = false
	l.v.met.replan(m.outcome, m.took)
	l.v.met.plannedRecords(m.created)
	if m.finalize {
		l.log.Info("plan finalized", "planned", m.plan.Planned)
	}
	l.adoptPlan(c, m.plan, m.rev)
	l.dirty = true
	if l.planDue {
		l.runPlan(c)
	} else if l.plan.Finality == coordination.PlanOpen {
		stopTimer(l.replan)
		l.replan = l.v.after(l.v.cfg.ReplanInterval, c.PID(), replanDue{gen: l.gen})
	}
	l.tick(c)
}

// planRun runs the planner and seeds, recounts and publishes its plan
// (docs/protocol.md, "Planning"). It runs on its own goroutine.
func planRun(ctx context.Context, v *env, planner coordination.Planner, gen uint64, base protocol.PlanRecord, rev uint64, known map[coordination.SplitID]bool, report func()) (d planDone) {
	start := time.Now()
	d.gen = gen
	defer func() { d.took = time.Since(start) }()
	sp, err := safePlan(ctx, planner, coordination.PlanContext{PlannerState: base.PlannerState, Generation: gen})
	if ctx.Err() != nil {
		d.outcome = "discarded"
		return d
	}
	if err != nil {
		if coordination.KindOf(err) == coordination.Fatal {
			d.outcome, d.err = "fatal", err
			if r := reasonOf(err); len(r) < 14 || r[:14] != "planner panic:" {
				d.err = coordination.Errorf(coordination.Fatal, "planner: %s", r)
			}
			return d
		}
		d.outcome, d.err = "error", err
		return d
	}
	if err := validatePlan(sp, base, gen, v.cap, v.nowMs()); err != nil {
		d.outcome, d.err = "fatal", err
		return d
	}
	created, err := seed(ctx, v, sp.Splits, known, protocol.Fingerprint(base.Fingerprint), gen, report)
	d.created = created
	if err != nil {
		switch {
		case ctx.Err() != nil:
			d.outcome = "discarded"
		case coordination.KindOf(err) == coordination.Fatal:
			d.outcome, d.err = "fatal", err
		default:
			v.log.Warn("seeding failed; will retry", "err", err)
			d.outcome = "error"
		}
		return d
	}
	oc, cancel := v.opCtx(ctx)
	defer cancel()
	es, err := v.st.List(oc, store.Durable, protocol.PrefixSplit)
	if err != nil {
		d.outcome, d.err = "error", err
		if ctx.Err() != nil {
			d.outcome = "discarded"
		}
		return d
	}
	want := base
	want.Planned = uint64(len(es))
	want.Finality = sp.Finality
	if sp.PlannerState != nil {
		want.PlannerState = append([]byte{}, sp.PlannerState...)
	}
	want.UpdatedAtMs = v.nowMs()
	r, ok, err := v.st.Update(oc, store.Durable, protocol.KeyPlan, protocol.EncodePlan(want), store.Revision(rev))
	switch {
	case err != nil:
		if ctx.Err() != nil {
			d.outcome = "discarded"
			return d
		}
		d.outcome, d.err = "error", err
	case !ok:
		d.outcome = "lost"
		if _, found, err := v.st.Get(oc, store.Durable, protocol.KeyPlan); err == nil && !found {
			d.outcome, d.err = "fatal", planMissing
		}
	default:
		d.plan, d.rev = want, uint64(r)
		d.outcome = "noop"
		if d.created > 0 || want.Planned != base.Planned || want.Finality != base.Finality {
			d.outcome = "ok"
		}
		d.finalize = want.Finality == coordination.PlanFinal && base.Finality != coordination.PlanFinal
	}
	return d
}

// safePlan calls the planner, turning a panic into Fatal `planner panic`.
func safePlan(ctx context.Context, p coordination.Planner, pc coordination.PlanContext) (sp coordination.SplitPlan, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = coordination.Errorf(coordination.Fatal, "planner panic: %v", r)
		}
	}()
	return p.Plan(ctx, pc)
}

// validatePlan checks a returned plan before any write (docs/protocol.md, "Planning").
func validatePlan(sp coordination.SplitPlan, base protocol.PlanRecord, gen uint64, limit int, nowMs int64) error {
	fp := protocol.Fingerprint(base.Fingerprint)
	seen := make(map[coordination.SplitID]bool, len(sp.Splits))
	for _, ps := range sp.Splits {
		id := ps.Spec.ID
		if _, err := coordination.NewSplitID(string(id)); err != nil {
			return coordination.Errorf(coordination.Fatal, "planner returned an invalid split id: %s", reasonOf(err))
		}
		if seen[id] {
			return coordination.Errorf(coordination.Fatal, "planner returned split %s more than once", id)
		}
		seen[id] = true
		if err := protocol.CheckSpecSize(id, len(protocol.EncodeSpec(protocol.NewSpec(ps.Spec, fp, gen))), limit); err != nil {
			return err
		}
		if ps.Seed != nil {
			if err := protocol.CheckProgressSize(id, len(protocol.EncodeProgress(protocol.SeedProgress(id, fp, *ps.Seed, nowMs))), limit); err != nil {
				return err
			}
		}
	}
	return nil
}

// publish computes the desired assignment and writes the records that
// changed (docs/protocol.md, "Assignment and the rebalance delay"), coalesced: at most one evaluation in flight.
func (l *leader) publish(c *actor.Context) {
	if !l.leading || !l.live || l.verdict || l.departed || !l.hasPlan || len(l.members) == 0 || l.plan.Generation != l.gen {
		return
	}
	if l.publishing {
		return
	}
	l.dirty = false
	l.publishing = true
	in := l.assignInput()
	pinned := l.grace.Pinned(l.v.clk.Now(), in.Splits)
	cache := make(map[string]assignCache, len(l.assigns))
	for k, a := range l.assigns {
		a.rec.Splits = slices.Clone(a.rec.Splits)
		cache[k] = a
	}
	members := make(map[string]bool, len(l.members))
	for m := range l.members {
		members[m] = true
	}
	windows := make(map[string]bool, len(l.departedAt))
	for i := range l.departedAt {
		windows[i] = true
	}
	v, pid, gen := l.v, c.PID(), l.plan.Generation
	v.goFunc(func(ctx context.Context) {
		v.send(pid, publishAssignment(ctx, v, in, pinned, cache, members, windows, gen))
	})
}

func (l *leader) assignInput() protocol.AssignInput {
	in := protocol.AssignInput{
		Members:    make([]string, 0, len(l.members)),
		Caps:       map[string]int{},
		DefaultCap: l.v.cfg.MaxInFlight,
		FP:         protocol.Fingerprint(l.fingerprint),
		Splits:     make([]protocol.AssignSplit, 0, len(l.records)),
	}
	for m, b := range l.members {
		in.Members = append(in.Members, m)
		if b > 0 {
			in.Caps[m] = int(b)
		}
	}
	if l.v.cfg.RebalanceDelay > 0 && len(l.departedAt) > 0 {
		in.Reserved = map[coordination.SplitID]bool{}
	}
	for id, f := range l.records {
		// A split record implies its spec (seeding writes the spec first).
		in.Splits = append(in.Splits, protocol.AssignSplit{ID: id, Weight: f.weight, HasSpec: true, Status: f.status, Owner: l.stickyOwner(id, f.owner)})
		if in.Reserved != nil {
			if _, ok := l.departedAt[f.owner]; ok && f.owner != "" {
				in.Reserved[id] = true
			}
		}
	}
	return in
}

// publishAssignment evaluates the assignment function and writes every
// member's record that changed; it runs on its own goroutine.
func publishAssignment(ctx context.Context, v *env, in protocol.AssignInput, pinned map[coordination.SplitID]bool, cache map[string]assignCache, members, windows map[string]bool, gen uint64) publishDone {
	out := protocol.KeepPinned(in, protocol.Assign(in), pinned)
	d := publishDone{gen: gen}
	prev := map[coordination.SplitID]string{}
	for inst, a := range cache {
		for _, id := range a.rec.Splits {
			prev[id] = inst
		}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for m := range out.Assigned {
			if !yield(m) {
				return
			}
		}
	})
	d.members = fmt.Sprint(names)
	for _, inst := range names {
		splits := out.Assigned[inst]
		for _, id := range splits {
			if p, ok := prev[id]; ok && p != inst {
				d.moved++
			}
		}
		old, cached := cache[inst]
		if cached && old.rec.Generation == gen && slices.Equal(old.rec.Splits, splits) {
			continue
		}
		rec := protocol.AssignmentRecord{Generation: gen, Splits: splits}
		b := protocol.EncodeAssignment(rec)
		if err := protocol.CheckAssignmentSize(inst, len(b), v.cap); err != nil {
			v.fatalIf(err)
			d.failed = true
			return d
		}
		oc, cancel := v.opCtx(ctx)
		var rev store.Revision
		var ok bool
		var err error
		if cached {
			rev, ok, err = v.st.Update(oc, store.Durable, protocol.AssignKey(inst), b, store.Revision(old.rev))
		} else {
			rev, ok, err = v.st.Create(oc, store.Durable, protocol.AssignKey(inst), b)
		}
		cancel()
		switch {
		case err != nil:
			v.fatalIf(err)
			d.failed = true
		case ok:
			d.written = append(d.written, assignCache{inst: inst, rec: rec, rev: uint64(rev)})
		default:
			d.lost = append(d.lost, assignCache{inst: inst, rev: old.rev})
		}
	}
	for inst, a := range cache {
		if !members[inst] && !windows[inst] {
			oc, cancel := v.opCtx(ctx)
			if ok, err := v.st.Delete(oc, store.Durable, protocol.AssignKey(inst), store.Revision(a.rev)); err == nil && ok {
				d.deleted = append(d.deleted, inst)
			}
			cancel()
		}
	}
	return d
}

func (l *leader) published(c *actor.Context, m publishDone) {
	l.publishing = false
	for _, w := range m.written {
		l.log.Debug("assignment written", "key", protocol.AssignKey(w.inst), "splits", len(w.rec.Splits), "rev", w.rev)
		if old, ok := l.assigns[w.inst]; !ok || w.rev > old.rev {
			l.cacheAssign(w)
		}
	}
	// A lost write uncaches the entry it was based on, never a fresher one
	// the watch delivered meanwhile (that would make every later Create lose
	// again). The loss is a trigger; a second loss in a row waits for the
	// next heartbeat so a stale view cannot spin.
	for _, lost := range m.lost {
		if cur, ok := l.assigns[lost.inst]; ok && cur.rev == lost.rev {
			l.uncacheAssign(lost.inst)
		}
	}
	if len(m.lost) > 0 {
		l.lostStreak++
		if l.lostStreak > 1 {
			l.publishRetry = true
		} else {
			l.dirty = true
		}
	} else {
		l.lostStreak = 0
	}
	for _, inst := range m.deleted {
		l.uncacheAssign(inst)
	}
	if m.failed {
		l.publishRetry = true
	}
	if len(m.written) > 0 && (m.members != l.announced || m.moved > 0) {
		l.announced = m.members
		l.log.Info("assignment published", "members", len(l.members), "moved", m.moved, "generation", m.gen)
	}
	l.schedulePublish(c)
}
