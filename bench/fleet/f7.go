package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spate-go/coordination/store"
)

// figureF7 measures a restart on an existing job: the job's c.splits
// splits are planned and seeded first, untimed, by a one-worker fleet whose
// worker (MaxInFlight 1) departs once the plan is published, so the job is
// left seeded and final with no worker and no leader, as after the restart
// of a whole fleet or a deploy that replaces every worker. Then c.workers
// workers start on it and the figure times Start -> every split held, and
// the first Gained -> every split held, against the raw writes those
// claims need (the first landed write of each split key after the restart
// began), issued from as many goroutines as there are workers. It reports
// the rate ratio raw/claims (target >= 0.5 at 10,000 splits) and its
// inverse (target <= 2 at 100,000), and where the time before the first
// Gained goes: when the workers' Start returned and their snapshots were
// loaded, when the leader key was won and when the first assignment record
// was written, all relative to the fleet's start. Last it measures the
// store's floor (runWatchedRaw): the same raw writes with c.workers plain
// watchers of the keys the updates rewrite, as every worker watches every
// split record; no implementation of the protocol claims faster than that.
func figureF7(ctx context.Context, e *env, c config) (string, error) {
	const job = "f7"
	defer func() { _ = e.dropJob(job) }()
	s, err := seed(ctx, e, c, job)
	if s != nil {
		for _, w := range s.f.workers {
			if derr := w.depart(); derr != nil && err == nil {
				err = fmt.Errorf("the seeder's Depart: %w", derr)
			}
			w.stop()
		}
	}
	if err != nil {
		return "", err
	}

	f, err := startFleet(e, job, c.splits, nil)
	if err != nil {
		return "", err
	}
	defer func() {
		for _, w := range f.workers {
			w.stop()
		}
	}()
	var mu sync.Mutex
	seen := make(map[string]bool)
	var claims []rawWrite
	var leaderAt, assignAt time.Duration
	f.setHook(func(_ int, w write) {
		if w.ok && w.op != opDelete {
			mu.Lock()
			if leaderAt == 0 && w.ks == store.Ephemeral && w.op == opCreate && isLeaderKey(w.key) {
				leaderAt = w.end.Sub(f.started)
			}
			if assignAt == 0 && leaderAt != 0 && w.ks == store.Durable && isAssignKey(w.key) {
				assignAt = w.end.Sub(f.started)
			}
			mu.Unlock()
		}
		if !w.ok || w.op == opDelete || !isSplitKey(w.key) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if k := w.ks.String() + "|" + w.key; !seen[k] {
			seen[k] = true
			claims = append(claims, rawWrite{ks: w.ks, op: w.op, size: w.size})
		}
	})
	for i := range c.workers {
		if err := f.add(workerSpec{id: fmt.Sprintf("w%d", i), maxInFlight: c.maxInFlight, reconcile: c.reconcile}); err != nil {
			return "", err
		}
	}
	if err := f.wait(ctx, "every split held", func() bool { return f.held() >= c.splits },
		func() string { return fmt.Sprintf("%d of %d splits held", f.held(), c.splits) }); err != nil {
		return "", err
	}
	took := time.Since(f.started)
	work := f.work()
	f.setHook(nil)
	first, last := f.firstGains()
	startA, startZ, loadA, loadZ := f.startsAndLoads()
	claiming := took - first
	mu.Lock()
	ws := append([]rawWrite(nil), claims...)
	elected, assigned := leaderAt, assignAt
	mu.Unlock()

	rawSt, err := e.store("f7raw")
	if err != nil {
		return "", err
	}
	defer func() { _ = rawSt.Close(); _ = e.dropJob("f7raw") }()
	raw, err := runRaw(ctx, rawSt, "f7", ws, c.workers)
	if err != nil {
		return "", err
	}
	floor, err := watchedFloor(ctx, e, ws, c.workers)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("F7 restart: %d workers claim %d seeded splits (MaxInFlight %d): Start -> all held %s, first Gained -> all held %s (Start returned per worker at %s-%s, snapshots loaded at %s-%s, leader key won at %s, first assignment written at %s, first Gained per worker at %s-%s; %s); raw %d writes [%s] from %d goroutines: %s; rate ratio raw/claims %.2f from Start, %.2f from the first Gained (target >= 0.5); claims/raw %.2f (target <= 2 at 100000); the store's floor with %d watchers of the updated keys: snapshots %s, writes landed %s (%.2f x raw; claims/floor %.2f), every update seen by all %s; held %v",
		c.workers, c.splits, c.maxInFlight, secs(took), secs(claiming), secs(startA), secs(startZ), secs(loadA), secs(loadZ), secs(elected), secs(assigned), secs(first), secs(last), work, len(ws), mix(ws), c.workers, secs(raw),
		ratio(raw, took), ratio(raw, claiming), ratio(took, raw), c.workers, secs(floor.load), secs(floor.landed), ratio(floor.landed, raw), ratio(took, floor.landed), secs(floor.total), f.counts()), nil
}

// watchedFloor runs the watched raw baseline (runWatchedRaw) of ws with
// one store per watcher, on a job of its own.
func watchedFloor(ctx context.Context, e *env, ws []rawWrite, watchers int) (watchedRaw, error) {
	const job = "f7floor"
	defer func() { _ = e.dropJob(job) }()
	sts := make([]store.Store, 0, watchers)
	defer func() {
		for _, s := range sts {
			_ = s.Close()
		}
	}()
	for range watchers {
		s, err := e.store(job)
		if err != nil {
			return watchedRaw{}, err
		}
		sts = append(sts, s)
	}
	return runWatchedRaw(ctx, sts, "f7", ws, watchers)
}

// isLeaderKey reports whether key is the leader value's: "leader", or
// "leader" under a family prefix ("job.leader").
func isLeaderKey(key string) bool { return key == "leader" || strings.HasSuffix(key, ".leader") }

// isAssignKey reports whether key is a member's assignment record:
// "assign.<member>", or that under a family prefix ("job.assign.<member>").
func isAssignKey(key string) bool {
	return strings.HasPrefix(key, "assign.") || strings.Contains(key, ".assign.")
}
