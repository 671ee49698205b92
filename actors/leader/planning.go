package leader

import (
	"context"
	"log/slog"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
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

// planRunner is the leader actor's planner run (docs/protocol.md,
// "Planning"), a component with its own state: one run is in flight at a
// time, across leads too, so the Planner is never called concurrently. Each
// method takes the lead it runs under: a run starts only under a lead that
// lasts, and a result is applied only while the lead it ran under lasts.
// Written by the leader actor only.
type planRunner struct {
	v       *worker.Env
	log     *slog.Logger
	planner coordination.Planner
	running bool // a run's goroutine is in flight
	due     bool // another run is due after the current one
	failed  bool // the last run failed: rerun at the next heartbeat
	replan  *clock.Timer
}

func newPlanRunner(v *worker.Env, log *slog.Logger) planRunner {
	return planRunner{v: v, log: log}
}

// seeding reports whether a run is in flight (it may be seeding).
func (p *planRunner) seeding() bool { return p.running }

// retryDue reports whether the last run failed and none is in flight: the
// heartbeat reruns it.
func (p *planRunner) retryDue() bool { return p.failed && !p.running }

// reset drops what the runner kept for a work lead that ended.
func (p *planRunner) reset() {
	worker.StopTimer(p.replan)
	p.failed, p.due = false, false
}

// stop stops the replan timer when the actor stops.
func (p *planRunner) stop() { worker.StopTimer(p.replan) }

// start starts a run under lead w from the plan record base at rev, or marks
// one due after the current run. It refuses a lead that ended (or none): a
// run of a lost term never starts under it. The run seeds the planned
// splits that view does not hold yet.
func (p *planRunner) start(w *lead, base protocol.PlanRecord, rev uint64, view *fleetView) {
	if w.ended() {
		return
	}
	if p.running {
		p.due = true
		return
	}
	p.running, p.due = true, false
	v, pid, planner, known := p.v, p.v.PIDs.Leader, p.planner, view.knownSplits()
	w.goFunc(v, pid, func(ctx context.Context) any {
		report := func() { w.deliver(v, pid, seedProgressed{}) }
		return planRun(ctx, v, planner, w.gen, base, rev, known, report)
	})
}

// finished takes the result m of the run started under lead w. The run's
// goroutine is done whatever w's fate; the result applies only while w
// lasts, and a result of an ended lead is ignored (planDiscarded). It
// returns the outcome the leader acts on.
func (p *planRunner) finished(w *lead, m planDone) planOutcome {
	p.running = false
	if w.ended() {
		return planDiscarded
	}
	switch m.outcome {
	case planDiscarded:
	case planFatal:
		p.v.FatalIf(m.err)
	case planLost:
		p.v.Metrics.Replan(m.outcome.label(), m.took)
		p.log.Warn("plan publish lost to a newer leader; stepping down", "generation", w.gen)
	case planFailed:
		p.v.Metrics.Replan(m.outcome.label(), m.took)
		p.failed = true
		if m.err != nil {
			p.log.Warn("planner run failed; will retry", "err", m.err)
		}
	default:
		p.failed = false
		p.v.Metrics.Replan(m.outcome.label(), m.took)
		p.v.Metrics.PlannedRecords(m.created)
		if m.finalized {
			p.log.Info("plan finalized", "planned", m.plan.Planned)
		}
	}
	return m.outcome
}

// resume starts the run that was due under lead w, when one is.
func (p *planRunner) resume(w *lead, base protocol.PlanRecord, rev uint64, view *fleetView) {
	if p.due {
		p.start(w, base, rev, view)
	}
}

// next follows a published plan under lead w: it starts the run that was
// due, or else, while the plan record base is open, arms the replan timer
// under w.
func (p *planRunner) next(w *lead, base protocol.PlanRecord, rev uint64, view *fleetView) {
	switch {
	case p.due:
		p.start(w, base, rev, view)
	case !w.ended() && base.Finality == coordination.PlanOpen:
		worker.StopTimer(p.replan)
		p.replan = w.after(p.v, p.v.Config.ReplanInterval, p.v.PIDs.Leader, replanDue{})
	}
}

// planRun runs the planner and seeds, recounts and publishes its plan
// (docs/protocol.md, "Planning"). It runs on a goroutine of the work lead,
// whose context ctx is.
func planRun(ctx context.Context, v *worker.Env, planner coordination.Planner, gen uint64, base protocol.PlanRecord, rev uint64, known map[coordination.SplitID]bool, report func()) (d planDone) {
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
	if err := validatePlan(sp, base, gen, v.ValueCap, v.NowMs(), known); err != nil {
		return planDone{outcome: planFatal, err: err}
	}
	created, err := seed(ctx, v, sp.Splits, known, protocol.Fingerprint(base.Fingerprint), gen, report)
	d.created = created
	if err != nil {
		d.outcome, d.err = judgeSeedErr(err, ctx.Err() != nil)
		if d.outcome == planFailed {
			v.Log.Warn("seeding failed; will retry", "err", err)
		}
		return d
	}
	oc, cancel := v.OpCtx(ctx)
	defer cancel()
	es, err := v.Store.List(oc, store.Durable, protocol.PrefixSplit)
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
	want.UpdatedAtMs = v.NowMs()
	r, ok, err := v.Store.Update(oc, store.Durable, protocol.KeyPlan, protocol.EncodePlan(want), store.Revision(rev))
	switch {
	case err != nil:
		d.outcome, d.err = judgeStoreErr(err, ctx.Err() != nil)
	case !ok:
		_, found, getErr := v.Store.Get(oc, store.Durable, protocol.KeyPlan)
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
// "Planning"): the plan record it publishes, then every split's id, spec
// and seed. An id of residual form is reserved for runtime-split residuals
// (docs/protocol.md, "Residual ids") unless known holds it: a split record
// of that id exists already (seeded before the rule, or a residual), so
// seeding skips it and no later residual can collide with it.
func validatePlan(sp coordination.SplitPlan, base protocol.PlanRecord, gen uint64, limit int, nowMs int64, known map[coordination.SplitID]bool) error {
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
			return coordination.Errorf(coordination.Fatal, "planner returned an invalid split id: %s", worker.ReasonOf(err))
		}
		if _, residual := protocol.ParseResidualID(id); residual && !known[id] {
			return coordination.Errorf(coordination.Fatal,
				"planner returned split %s, an id of residual form (_<split>_<epoch>_<counter>, or ..._h) reserved for runtime-split residuals; rename it", id)
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
