package main

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// f8Run is one F8 run: when every split was first held and how, and what
// moved afterwards.
type f8Run struct {
	spread  time.Duration // first worker's start -> last worker's start
	took    time.Duration // first worker's start -> every split held
	counts  []int         // splits per worker when every split was first held
	moved   int           // held splits that left a worker afterwards
	balance bool          // counts differ by at most one
}

// figureF8 starts c.workers workers at once on a new job of c.f8splits
// splits (weights 1, MaxInFlight c.maxInFlight) c.f8runs times. A run
// passes when the fleet is balanced (per-worker counts differ by at most
// one) the first time every split is held, and no held split leaves a
// worker (Lost or RevokeRequested) in the StartupGrace plus two heartbeats
// that follow, which is when a rebalance of pinned splits would happen
// (docs/protocol.md, "Assignment and the rebalance delay").
func figureF8(ctx context.Context, e *env, c config) (string, error) {
	watch := e.grace + 2*e.lease/3
	var runs []f8Run
	for i := range c.f8runs {
		r, err := f8Once(ctx, e, c, fmt.Sprintf("f8r%d", i), watch)
		if err != nil {
			return "", fmt.Errorf("run %d: %w", i+1, err)
		}
		runs = append(runs, r)
	}
	pass, moved := 0, 0
	var tooks, spreads []time.Duration
	var bad []string
	for i, r := range runs {
		moved += r.moved
		tooks, spreads = append(tooks, r.took), append(spreads, r.spread)
		if r.balance && r.moved == 0 {
			pass++
		} else {
			bad = append(bad, fmt.Sprintf("run %d %v moved %d", i+1, r.counts, r.moved))
		}
	}
	failures := "none"
	if len(bad) > 0 {
		failures = fmt.Sprint(bad)
	}
	return fmt.Sprintf("F8 %d workers started together on a new job of %d splits, %d runs: balanced at first hold and 0 moves in %d of %d (target %d of %d); moved %d in all; start spread max %s; Start -> all held median %s max %s; failing runs: %s",
		c.workers, c.f8splits, len(runs), pass, len(runs), len(runs), len(runs), moved, secs(slices.Max(spreads)),
		secs(percentile(tooks, 0.5)), secs(slices.Max(tooks)), failures), nil
}

// f8Once runs one F8 fleet on job and watches it for watch after every
// split was first held.
func f8Once(ctx context.Context, e *env, c config, job string, watch time.Duration) (f8Run, error) {
	f, err := startFleet(e, job, c.f8splits, nil)
	if err != nil {
		return f8Run{}, err
	}
	defer func() { _ = f.stop() }()
	for i := range c.workers {
		if err := f.add(workerSpec{id: fmt.Sprintf("w%d", i), maxInFlight: c.maxInFlight, reconcile: c.reconcile}); err != nil {
			return f8Run{}, err
		}
	}
	r := f8Run{spread: time.Since(f.started)}
	if err := f.wait(ctx, "every split held", func() bool { return f.held() >= c.f8splits },
		func() string { return fmt.Sprintf("%d of %d splits held", f.held(), c.f8splits) }); err != nil {
		return r, err
	}
	r.took = time.Since(f.started)
	r.counts = f.counts()
	r.balance = slices.Max(r.counts)-slices.Min(r.counts) <= 1
	before := f.ended()
	if err := idle(ctx, watch); err != nil {
		return r, err
	}
	if err := f.failed(); err != nil {
		return r, err
	}
	r.moved = f.ended() - before
	return r, nil
}
