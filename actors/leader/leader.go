package leader

import (
	"time"

	"fmt"
	"log/slog"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
)

// leaderActor is the leader actor: one process made of four parts over one
// fleet view, each part in its own file with its pure decisions beside it:
//
//   - the election (election.go, fence.go), a component of its own: it
//     stands for the leader key, fences the plan generation, renews the
//     key, steps down (docs/protocol.md, "Leadership"), and hands out the
//     work lead; the actor dispatches to its verbs and keeps none of its
//     bookkeeping;
//   - the planner run (planning.go), a component of its own: it runs the
//     Planner, seeds and publishes the plan (docs/protocol.md, "Planning"),
//     each of its methods taking the lead it runs under;
//   - the publisher (publish.go), a component of its own: it computes and
//     writes the assignment records (docs/protocol.md, "Assignment and the
//     rebalance delay") from the fleet view (fleetview.go), each of its
//     methods that starts work or applies a result taking the lead it runs
//     under;
//   - the cutter (cut.go): at each heartbeat under the work lead it decides
//     runtime splits (docs/protocol.md, "Runtime split"), whose requests
//     the publisher writes.
//
// The election hands the planner run and the publisher a lead (lead.go) once
// the fence landed; it ends when the leadership does, and no result of an
// ended lead is applied: fromLead drops the election's, and the planner run
// and the publisher, given the lead a result came under, drop their own. The parts share one process because a
// run and a publish read the fleet view and the plan view at the instant
// they start, and a publish is suppressed while a run seeds; as separate
// actors each would keep its own copy of those facts.
type leaderActor struct {
	v   *worker.Env
	log *slog.Logger

	fingerprint string
	// phase: the watches are live, the work is over (Retire; StepDown
	// marks it retired too).
	phase worker.JobPhase

	el   election
	run  planRunner
	pub  publisher
	cut  cutter
	view fleetView
}

// New returns the producer of worker v's leader-planning actor.
func New(v *worker.Env) actor.Producer {
	return func() actor.Receiver {
		l := &leaderActor{v: v, log: v.Log.With("actor", "leader"), view: newFleetView(v.Config.StartupGrace)}
		l.el = newElection(v, l.log, l.workEnded)
		l.run = newPlanRunner(v, l.log)
		l.pub = newPublisher(v, l.log)
		return l
	}
}

// Receive handles one message. A run of split record changes, the hot
// message, is handled apart from the rest: hollywood runs each burst of an
// idle actor's inbox on a fresh goroutine, whose stack is copied whenever
// the path's frames outgrow it.
func (l *leaderActor) Receive(c *actor.Context) {
	if m, ok := c.Message().(recordmsg.RecordsChanged); ok {
		l.recordsChanged(c, m)
		return
	}
	l.receive(c)
}

// receive handles every message but a run of split record changes.
func (l *leaderActor) receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized, actor.Started:
	case actor.Stopped:
		l.el.stop()
		l.run.stop()
	case wire.WatchesChanged:
		l.phase.Observe(m)
		if m.Live {
			l.pub.changed()
		}
		l.tick(c)
	case wire.Reconciled:
		l.pub.changed()
		l.tick(c)
	case wire.HeartbeatTicked:
		l.heartbeat(c)
	case recordmsg.LeaderChanged:
		if !m.Deleted {
			l.el.sighted(m)
			break
		}
		l.el.deleted(m)
		l.tick(c)
	case recordmsg.PlanChanged:
		if m.Deleted {
			l.el.planDeleted()
			break
		}
		l.adoptPlan(c, m.Plan, m.Rev)
	case wire.PresenceChanged, recordmsg.AssignmentChanged:
		l.observeFleet(c, m)
	case wire.SessionChanged: // from the lease
		if !m.Live {
			l.el.orphan("session ended; stepping down")
			break
		}
		l.run.planner, l.fingerprint = m.Job.Planner, m.Job.Fingerprint
		l.view.records = worker.Sized(l.view.records, worker.SizeHint(m.Planned))
		l.el.session = m.Nonce
		l.tick(c)
	case wire.Retire: // from the root: the verdict, or Depart began
		l.phase.Observe(m)
		l.el.retire()
	case wire.StepDown: // from the root (Depart)
		l.phase.Retired = true
		l.el.stepDown(m)
	case electDone:
		if l.el.acquired(m, l.fingerprint, l.phase.Over()) {
			l.view.grace.Lead(l.v.Clock.Now())
		}
	case leadResult:
		l.fromLead(c, m)
	case publishDue:
		l.pub.taken()
		if _, _, plan := l.el.planView(); l.phase.Live && plan {
			l.pub.publish(l.el.working(), &l.view, l.fingerprint, func() cutRequests {
				return l.cut.take(l.v.Clock.Now(), l.v.Config.EffectiveCutInterval(), &l.view)
			})
		}
	default:
		l.log.Warn("unknown message", "type", fmt.Sprintf("%T", m))
	}
}

// fromLead takes the result of work started under a lead. The planner run
// and the publisher keep one goroutine in flight across leads, so its end
// counts whatever the lead's fate; the result itself is applied only while
// its lead lasts (docs/protocol.md, "Leadership").
func (l *leaderActor) fromLead(c *actor.Context, m leadResult) {
	switch r := m.msg.(type) {
	case planDone:
		l.planned(c, m.lead, r)
		return
	case publishDone:
		if r.failed {
			l.cut.retake() // the retry writes the requests it may not have
		}
		if l.pub.published(m.lead, r, &l.view) {
			l.observeClaims(l.v.Clock.Now())
			l.pub.schedule()
		} else {
			l.tick(c)
		}
		return
	}
	if m.lead.ended() {
		l.tick(c)
		return
	}
	switch r := m.msg.(type) {
	case fenceDone:
		l.fenced(c, r)
	case renewDone:
		l.el.renewed(r)
	case leaderRetryDue:
		l.el.retried(r)
	case seedProgressed:
		l.pub.seedsPublishable()
		l.tick(c)
	case replanDue:
		l.runPlan()
	case holdEnded:
		l.pub.holdEnded(m.lead)
		l.tick(c)
	case cutDue:
		l.cut.fired()
		l.evaluateCuts(l.v.Clock.Now())
		l.tick(c)
	default:
		l.log.Warn("unknown message", "type", fmt.Sprintf("%T", r))
	}
}

func (l *leaderActor) heartbeat(c *actor.Context) {
	now := l.v.Clock.Now()
	l.el.renew(now)
	if l.view.expireDepartures(now, l.v.Config.RebalanceDelay) {
		l.pub.changed()
	}
	l.pub.heartbeat(now, &l.view)
	l.observeClaims(now)
	l.evaluateCuts(now)
	if l.run.retryDue() {
		l.runPlan()
	}
	l.tick(c)
}

// evaluateCuts runs the cutter at now while working as leader; when it
// asks, the assignment is published.
func (l *leaderActor) evaluateCuts(now time.Time) {
	if l.el.working() == nil {
		return
	}
	if l.cut.evaluate(now, l.v.Config.EffectiveCutInterval(), &l.view, l.v.Config, l.v.ValueCap) {
		l.pub.changed()
	}
}

// evaluateCutsSoon runs the cutter at now when a lane was freed or a
// residual claimed, or once a quarter of the cut interval passed since it
// last evaluated, if that is later (which bounds what evaluations cost a
// fleet whose splits complete all the time): a lane that runs dry is cut for
// within about that quarter, not only at the next heartbeat.
func (l *leaderActor) evaluateCutsSoon(now time.Time) {
	interval := l.v.Config.EffectiveCutInterval()
	if interval <= 0 {
		return
	}
	if next := l.cut.evaluated.Add(interval / 4); now.Before(next) {
		l.cut.armAt(l.el.working(), l.v, next)
		return
	}
	l.evaluateCuts(now)
}

// tick stands for election or publishes when due.
func (l *leaderActor) tick(c *actor.Context) {
	if l.v.Halted() {
		return
	}
	if l.phase.Live && !l.phase.Over() && l.el.canCampaign() {
		l.el.campaign()
	}
	l.pub.schedule()
}

// fenced starts the planner run and the publisher under the work lead the
// election hands out once the generation fence landed.
func (l *leaderActor) fenced(c *actor.Context, m fenceDone) {
	if w := l.el.fenced(m, l.phase.Over()); w != nil {
		now := l.v.Clock.Now()
		l.cut.lead(now)
		l.cut.armAt(w, l.v, now.Add(l.v.Config.EffectiveCutInterval()))
		l.view.indexPublished()
		l.view.watchClaims()
		l.pub.changed()
		l.runPlan()
	}
	l.tick(c)
}

// runPlan starts a planner run under the work lead, if any.
func (l *leaderActor) runPlan() {
	pl, rev, _ := l.el.planView()
	l.run.start(l.el.working(), pl, rev, &l.view)
}

// planned takes a planner run's result, delivered under the lead w it ran
// under: the run counts its end whatever w's fate, and applies the result
// only while w lasts.
func (l *leaderActor) planned(c *actor.Context, w *lead, m planDone) {
	o := l.run.finished(w, m)
	l.pub.seedsPublishable()
	switch {
	case w.ended():
		pl, rev, _ := l.el.planView()
		l.run.resume(l.el.working(), pl, rev, &l.view) // a run due for a later lead
		l.tick(c)
	case o == planLost:
		l.el.resign(nil)
	case o == planChanged || o == planUnchanged:
		l.adoptPlan(c, m.plan, m.rev)
		l.pub.changed()
		pl, rev, _ := l.el.planView()
		l.run.next(w, pl, rev, &l.view)
		l.tick(c)
	}
}

// adoptPlan takes a newer plan record into the election's plan view.
func (l *leaderActor) adoptPlan(c *actor.Context, pl protocol.PlanRecord, rev uint64) {
	if l.el.observePlan(pl, rev) {
		l.tick(c)
	}
}

// workEnded drops what the planner run and the publisher kept for the work
// lead; the election calls it whenever the work lead may have ended.
func (l *leaderActor) workEnded() {
	l.view.unindexPublished()
	l.view.unwatchClaims()
	l.run.reset()
	l.pub.stopWork()
	l.cut.stop()
}
