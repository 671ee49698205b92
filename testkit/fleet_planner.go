package testkit

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/spate-go/coordination"
)

// TestPlanner is a deterministic [coordination.Planner] for fleets. Its plan
// is a sequence of stages: the run whose cursor is k (no cursor counts as 0)
// returns the splits of stages 0..k and the cursor k+1; the plan is final
// from the run that returns the last stage on, unless Open is set. A
// single-stage planner therefore always returns the same plan. The cursor is
// persisted through the plan record, so a successor leader continues where
// the previous one stopped. It is safe for concurrent use.
type TestPlanner struct {
	fingerprint string
	stages      [][]coordination.PlannedSplit
	open        bool

	mu   sync.Mutex
	runs int
	err  error
}

// NewTestPlanner returns a planner with fingerprint fp whose plan is final
// and consists of splits.
func NewTestPlanner(fp string, splits ...coordination.PlannedSplit) *TestPlanner {
	return &TestPlanner{fingerprint: fp, stages: [][]coordination.PlannedSplit{splits}}
}

// NewGrowingPlanner returns a planner with fingerprint fp whose plan grows by
// one stage per run and becomes final with the last stage.
func NewGrowingPlanner(fp string, stages ...[]coordination.PlannedSplit) *TestPlanner {
	return &TestPlanner{fingerprint: fp, stages: stages}
}

// NewOpenPlanner returns a planner with fingerprint fp whose plan is splits
// and never becomes final.
func NewOpenPlanner(fp string, splits ...coordination.PlannedSplit) *TestPlanner {
	return &TestPlanner{fingerprint: fp, stages: [][]coordination.PlannedSplit{splits}, open: true}
}

// Fingerprint returns the planner's fingerprint.
func (p *TestPlanner) Fingerprint() string { return p.fingerprint }

// Runs returns how many times Plan has been called, across all leaders.
func (p *TestPlanner) Runs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runs
}

// FailRuns makes every later Plan call return err (nil restores normal runs).
func (p *TestPlanner) FailRuns(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
}

// Plan returns the stages up to the cursor in pc. It never blocks.
func (p *TestPlanner) Plan(_ context.Context, pc coordination.PlanContext) (coordination.SplitPlan, error) {
	p.mu.Lock()
	p.runs++
	err := p.err
	p.mu.Unlock()
	if err != nil {
		return coordination.SplitPlan{}, err
	}
	k := 0
	if pc.PlannerState != nil {
		n, err := strconv.Atoi(string(pc.PlannerState))
		if err != nil {
			return coordination.SplitPlan{}, coordination.Errorf(coordination.Fatal, "test planner: bad cursor %q", pc.PlannerState)
		}
		k = n
	}
	last := len(p.stages) - 1
	k = min(k, last)
	var splits []coordination.PlannedSplit
	for _, st := range p.stages[:k+1] {
		splits = append(splits, st...)
	}
	fin := coordination.PlanOpen
	if k == last && !p.open {
		fin = coordination.PlanFinal
	}
	next := min(k+1, last)
	return coordination.SplitPlan{Splits: splits, Finality: fin, PlannerState: []byte(strconv.Itoa(next))}, nil
}

// Splits returns n planned splits "s00", "s01", ... with weight 1 and no
// seed; weights, when given, set the weight of the first len(weights) splits.
func Splits(n int, weights ...uint64) []coordination.PlannedSplit {
	return SplitsFrom("s", 0, n, weights...)
}

// SplitsFrom returns n planned splits named prefix followed by a two-digit
// index starting at first, with weight 1 unless weights says otherwise.
func SplitsFrom(prefix string, first, n int, weights ...uint64) []coordination.PlannedSplit {
	out := make([]coordination.PlannedSplit, n)
	for i := range out {
		w := uint64(1)
		if i < len(weights) {
			w = weights[i]
		}
		out[i] = coordination.PlannedSplit{Spec: coordination.SplitSpec{
			ID:         coordination.SplitID(fmt.Sprintf("%s%02d", prefix, first+i)),
			Descriptor: []byte(fmt.Sprintf("d%d", first+i)),
			Weight:     w,
		}}
	}
	return out
}
