package leader

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
)

// planOutcome is how one planner run ended (docs/protocol.md, "Planning").
type planOutcome int

const (
	planChanged   planOutcome = iota + 1 // the plan record was published with a change
	planUnchanged                        // published, nothing changed
	planFailed                           // a transient failure: rerun at the next heartbeat
	planFatal                            // the error is Fatal
	planLost                             // the plan publish lost its compare: a newer leader wrote it
	planDiscarded                        // the lead ended mid-run
)

// label is the outcome's value of the replans metric.
func (o planOutcome) label() string {
	switch o {
	case planChanged:
		return "ok"
	case planUnchanged:
		return "noop"
	}
	return "error"
}

// judgePlannerErr classifies the error of Planner.Plan; panicked says the
// planner panicked (err is then its Fatal `planner panic`). A Fatal error of
// the planner's own is named as the planner's.
func judgePlannerErr(err error, panicked bool) (planOutcome, error) {
	switch {
	case panicked:
		return planFatal, err
	case coordination.KindOf(err) == coordination.Fatal:
		return planFatal, coordination.Errorf(coordination.Fatal, "planner: %s", worker.ReasonOf(err))
	}
	return planFailed, err
}

// judgeSeedErr classifies seeding's error; ended says the lead ended. A
// transient seeding error carries no error: seeding logs it.
func judgeSeedErr(err error, ended bool) (planOutcome, error) {
	switch {
	case ended:
		return planDiscarded, nil
	case coordination.KindOf(err) == coordination.Fatal:
		return planFatal, err
	}
	return planFailed, nil
}

// judgeStoreErr classifies the error of the run's listing or plan publish;
// ended says the lead ended. A Fatal store error (a value above its cap, a
// broken store) is Fatal: rerunning the planner cannot cure it.
func judgeStoreErr(err error, ended bool) (planOutcome, error) {
	switch {
	case ended:
		return planDiscarded, nil
	case coordination.KindOf(err) == coordination.Fatal:
		return planFatal, err
	}
	return planFailed, err
}

// judgeLostPublish classifies the read that follows a lost plan publish:
// the plan record is gone (Fatal) or a newer leader wrote it.
func judgeLostPublish(getErr error, found bool) (planOutcome, error) {
	if getErr == nil && !found {
		return planFatal, worker.PlanMissing
	}
	return planLost, nil
}

// judgePublished classifies a plan publish that landed want over base after
// the run created split records: whether it changed the plan, and whether it
// finalized it.
func judgePublished(created int, want, base protocol.PlanRecord) (o planOutcome, finalized bool) {
	o = planUnchanged
	if created > 0 || want.Planned != base.Planned || want.Finality != base.Finality {
		o = planChanged
	}
	return o, want.Finality == coordination.PlanFinal && base.Finality != coordination.PlanFinal
}
