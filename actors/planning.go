package actors

import (
	"context"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// Results of a planner run, delivered under the work lead.
type (
	// planDone is one planner run's result.
	planDone struct {
		outcome   planOutcome
		plan      protocol.PlanRecord // planChanged, planUnchanged: the published plan
		rev       uint64
		created   int
		err       error
		took      time.Duration
		finalized bool // this run made the plan final
	}
	// seedProgressed reports that the run seeded another seedReport splits.
	seedProgressed struct{}
	// replanDue is the ReplanInterval timer of an open plan.
	replanDue struct{}
)

// planning is the leader actor's planner-run part (docs/protocol.md,
// "Planning"). One run is in flight at a time, across leads too, so the
// Planner is never called concurrently. Written by the leader actor only.
type planning struct {
	planner coordination.Planner
	running bool // a run's goroutine is in flight
	due     bool // another run is due after the current one
	failed  bool // the last run failed: rerun at the next heartbeat
	replan  *clock.Timer
}

// reset drops what a run kept for the lead that ended.
func (p *planning) reset() {
	stopTimer(p.replan)
	p.failed, p.due = false, false
}

// runPlan starts a planner run under the work lead, or marks one due after
// the current run.
func (l *leaderActor) runPlan(c *actor.Context) {
	w := l.el.working()
	if w == nil {
		return
	}
	if l.run.running {
		l.run.due = true
		return
	}
	l.run.running, l.run.due = true, false
	v, pid, planner, base, rev, known := l.v, c.PID(), l.run.planner, l.el.plan, l.el.planRev, l.view.knownSplits()
	w.goFunc(v, pid, func(ctx context.Context) any {
		report := func() { w.deliver(v, pid, seedProgressed{}) }
		return planRun(ctx, v, planner, w.gen, base, rev, known, report)
	})
}

// finishedRun marks the run's goroutine done, whatever its lead's fate, and
// starts a run due for the current lead.
func (l *leaderActor) finishedRun(c *actor.Context, stale bool) {
	l.run.running = false
	l.seedsPublishable()
	if stale && l.run.due {
		l.runPlan(c)
	}
}

// seedsPublishable makes the splits that appeared while the run seeded an
// input change, at one of its progress reports or at its end.
func (l *leaderActor) seedsPublishable() {
	l.pub.dirty = l.pub.dirty || l.pub.seeded
	l.pub.seeded = false
}

// planned applies a run's result; its lead still lasts.
func (l *leaderActor) planned(c *actor.Context, m planDone) {
	switch m.outcome {
	case planDiscarded:
		return
	case planFatal:
		l.v.fatalIf(m.err)
		return
	case planLost:
		l.v.met.replan(m.outcome.label(), m.took)
		l.log.Warn("plan publish lost to a newer leader; stepping down", "generation", l.el.term.lead.gen)
		l.el.resign(nil)
		return
	case planFailed:
		l.v.met.replan(m.outcome.label(), m.took)
		l.run.failed = true
		if m.err != nil {
			l.log.Warn("planner run failed; will retry", "err", m.err)
		}
		return
	}
	l.run.failed = false
	l.v.met.replan(m.outcome.label(), m.took)
	l.v.met.plannedRecords(m.created)
	if m.finalized {
		l.log.Info("plan finalized", "planned", m.plan.Planned)
	}
	l.adoptPlan(c, m.plan, m.rev)
	l.pub.dirty = true
	if l.run.due {
		l.runPlan(c)
	} else if w := l.el.working(); w != nil && l.el.plan.Finality == coordination.PlanOpen {
		stopTimer(l.run.replan)
		l.run.replan = w.after(l.v, l.v.cfg.ReplanInterval, c.PID(), replanDue{})
	}
	l.tick(c)
}

// planRun runs the planner and seeds, recounts and publishes its plan
// (docs/protocol.md, "Planning"). It runs on a goroutine of the work lead,
// whose context ctx is.
func planRun(ctx context.Context, v *env, planner coordination.Planner, gen uint64, base protocol.PlanRecord, rev uint64, known map[coordination.SplitID]bool, report func()) (d planDone) {
	start := time.Now()
	defer func() { d.took = time.Since(start) }()
	sp, panicked, err := safePlan(ctx, planner, coordination.PlanContext{PlannerState: base.PlannerState, Generation: gen})
	if ctx.Err() != nil {
		return planDone{outcome: planDiscarded}
	}
	if err != nil {
		d.outcome, d.err = judgePlannerErr(err, panicked)
		return d
	}
	if err := validatePlan(sp, base, gen, v.cap, v.nowMs()); err != nil {
		return planDone{outcome: planFatal, err: err}
	}
	created, err := seed(ctx, v, sp.Splits, known, protocol.Fingerprint(base.Fingerprint), gen, report)
	d.created = created
	if err != nil {
		d.outcome, d.err = judgeSeedErr(err, ctx.Err() != nil)
		if d.outcome == planFailed {
			v.log.Warn("seeding failed; will retry", "err", err)
		}
		return d
	}
	oc, cancel := v.opCtx(ctx)
	defer cancel()
	es, err := v.st.List(oc, store.Durable, protocol.PrefixSplit)
	if err != nil {
		d.outcome, d.err = judgeStoreErr(err, ctx.Err() != nil)
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
		d.outcome, d.err = judgeStoreErr(err, ctx.Err() != nil)
	case !ok:
		_, found, getErr := v.st.Get(oc, store.Durable, protocol.KeyPlan)
		d.outcome, d.err = judgeLostPublish(getErr, found)
	default:
		d.plan, d.rev = want, uint64(r)
		d.outcome, d.finalized = judgePublished(d.created, want, base)
	}
	return d
}

// safePlan calls the planner; a panic becomes Fatal `planner panic` with
// panicked set.
func safePlan(ctx context.Context, p coordination.Planner, pc coordination.PlanContext) (sp coordination.SplitPlan, panicked bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			panicked, err = true, coordination.Errorf(coordination.Fatal, "planner panic: %v", r)
		}
	}()
	sp, err = p.Plan(ctx, pc)
	return sp, false, err
}

// validatePlan checks a returned plan before any write (docs/protocol.md,
// "Planning"): the plan record it publishes, then every split's spec and
// seed.
func validatePlan(sp coordination.SplitPlan, base protocol.PlanRecord, gen uint64, limit int, nowMs int64) error {
	if sp.PlannerState != nil {
		base.PlannerState = sp.PlannerState
	}
	if err := protocol.CheckPlanSize(base, limit); err != nil {
		return err
	}
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
