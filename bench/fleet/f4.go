package main

import (
	"context"
	"fmt"
	"time"
)

// f4Others is how many workers besides the observed one an F4 fleet has.
const f4Others = 2

// f4Phase is one F4 measurement: what the observed worker's watches
// delivered per second while every worker committed every held split every
// commitPeriod.
type f4Phase struct {
	observedHeld int
	othersHeld   []int
	events       float64 // per second, delivered to the observed worker
	ownCommits   float64 // per second, the observed worker's
	fleetCommits float64 // per second, all workers'
}

// f4Run builds a fleet where the observed worker holds c.f4few splits and
// each other worker holds others, lets it settle, turns committing on and
// counts over c.f4window.
func f4Run(ctx context.Context, e *env, c config, job string, others int) (f4Phase, error) {
	n := c.f4few + f4Others*others
	specs := []workerSpec{{id: "observed", maxInFlight: c.f4few, reconcile: c.reconcile}}
	for i := range f4Others {
		specs = append(specs, workerSpec{id: fmt.Sprintf("other%d", i), maxInFlight: max(c.f4many, c.f4few), reconcile: c.reconcile})
	}
	f, err := startFleet(e, job, n, specs)
	if err != nil {
		return f4Phase{}, err
	}
	defer func() { _ = f.stop() }()
	if err := f.waitHeld(ctx, n, min(f.env.lease/3, 2*time.Second)); err != nil {
		return f4Phase{}, err
	}
	f.setCommitting(true)
	if err := idle(ctx, 2*commitPeriod); err != nil { // let every loop reach its first round
		return f4Phase{}, err
	}
	obs := f.workers[0]
	ev0, own0, all0, t0 := obs.st.events.Load(), obs.commits.Load(), fleetCommits(f), time.Now()
	if err := idle(ctx, c.f4window); err != nil {
		return f4Phase{}, err
	}
	secs := time.Since(t0).Seconds()
	p := f4Phase{
		observedHeld: int(obs.heldN.Load()),
		events:       float64(obs.st.events.Load()-ev0) / secs,
		ownCommits:   float64(obs.commits.Load()-own0) / secs,
		fleetCommits: float64(fleetCommits(f)-all0) / secs,
	}
	for _, w := range f.workers[1:] {
		p.othersHeld = append(p.othersHeld, int(w.heldN.Load()))
	}
	f.setCommitting(false)
	return p, f.failed()
}

// fleetCommits sums the landed commits of every worker.
func fleetCommits(f *fleet) int64 {
	var n int64
	for _, w := range f.workers {
		n += w.commits.Load()
	}
	return n
}

// figureF4 runs the few/few and few/many distributions and compares the
// observed worker's event rates.
func figureF4(ctx context.Context, e *env, c config) (string, error) {
	few, err := f4Run(ctx, e, c, "f4few", c.f4few)
	if err != nil {
		return "", err
	}
	many, err := f4Run(ctx, e, c, "f4many", c.f4many)
	if err != nil {
		return "", err
	}
	r := 0.0
	if few.events > 0 {
		r = many.events / few.events
	}
	return fmt.Sprintf("F4 events/s delivered to a worker holding %d/%d (its own commits %.0f/%.0f /s): others hold %v -> %.1f/s (fleet commits %.0f/s); others hold %v -> %.1f/s (fleet commits %.0f/s); ratio %.2f (target ~1: independent of what others hold)",
		few.observedHeld, many.observedHeld, few.ownCommits, many.ownCommits,
		few.othersHeld, few.events, few.fleetCommits, many.othersHeld, many.events, many.fleetCommits, r), nil
}
