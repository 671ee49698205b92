package coordination

import "context"

// PlannedSplit is one split of a [SplitPlan].
type PlannedSplit struct {
	// Spec describes the split. It is written once; an existing spec is never
	// overwritten, whatever a later plan says.
	Spec SplitSpec
	// Seed, when non-nil, is the split's initial progress. First writer wins:
	// a seed never overwrites an existing progress record.
	Seed *SplitProgress
}

// PlanFinality says whether a plan enumerates the whole job.
type PlanFinality int

const (
	// PlanOpen means more splits may come: the leader replans every
	// Config.ReplanInterval and the job never reaches a verdict.
	PlanOpen PlanFinality = iota
	// PlanFinal means the enumeration is complete: the job ends with
	// [AllComplete] or [Stalled].
	PlanFinal
)

// SplitPlan is the result of one [Planner.Plan] run.
type SplitPlan struct {
	// Splits lists the work, in the order it should be seeded. Splits already
	// in the store are left as they are.
	Splits []PlannedSplit
	// Finality says whether the plan is complete.
	Finality PlanFinality
	// PlannerState is the cursor handed to the next run, on this leader or a
	// successor. nil keeps the previous cursor; an empty non-nil slice stores
	// an empty cursor.
	PlannerState []byte
}

// PlanContext is what a [Planner] run is told.
type PlanContext struct {
	// PlannerState is the cursor the last successful run returned; nil on the
	// first plan.
	PlannerState []byte
	// Generation is the leadership generation running the plan; it is bumped
	// on every leader change, so a planner can tell a fresh leadership from a
	// continuation.
	Generation uint64
}

// Planner enumerates a job's work. It runs only on the elected leader.
type Planner interface {
	// Fingerprint is the config-derived identity of the job. Every worker
	// must present a byte-equal, non-empty fingerprint; it is read once, at
	// Start.
	Fingerprint() string
	// Plan enumerates the splits. It runs on its own goroutine and may block
	// on I/O; ctx ends when this worker's leadership does. An error of kind
	// Fatal ends the coordinator; any other error is retried on the next tick.
	Plan(ctx context.Context, pc PlanContext) (SplitPlan, error)
}
