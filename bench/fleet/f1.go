package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/spate-go/coordination/store"
)

// seeded is a one-worker fleet that has planned and seeded its splits, with
// what F1 measured on the way.
type seeded struct {
	f       *fleet
	took    time.Duration // Start → plan published
	creates int           // Durable creates of split keys between the planner's return and the publish
	bytes   int64         // their value bytes
	other   int           // other Durable writes in that window (assignments, claims)
	peak    int           // most of those creates in flight at once
	work    string        // CPU and watch events from Start to the publish (fleet.work)
}

// seed starts one worker (MaxInFlight 1, so claims stay out of the way) on
// a fresh job of n splits and waits until its plan is published.
func seed(ctx context.Context, e *env, c config, job string) (*seeded, error) {
	var mu sync.Mutex
	s := &seeded{}
	var ivs [][2]time.Time
	f, err := startFleet(e, job, c.splits, nil)
	if err != nil {
		return nil, err
	}
	s.f = f
	f.setHook(func(_ int, w write) {
		r := f.plan.returnedAt()
		if w.ks != store.Durable || w.op == opDelete || isPlanKey(w.key) || r.IsZero() || w.start.Before(r) || !f.publishedAt().IsZero() {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if w.op == opCreate && isSplitKey(w.key) {
			s.creates++
			s.bytes += int64(w.size)
			ivs = append(ivs, [2]time.Time{w.start, w.end})
		} else {
			s.other++
		}
	})
	if err := f.add(workerSpec{id: "seeder", maxInFlight: 1, reconcile: c.reconcile}); err != nil {
		return s, err
	}
	if err := f.waitPublished(ctx); err != nil {
		return s, err
	}
	f.setHook(nil)
	s.work = f.work()
	s.took = f.publishedAt().Sub(f.started)
	mu.Lock()
	defer mu.Unlock()
	s.peak = peakOverlap(ivs)
	return s, nil
}

// figureF1 times plan + seed of c.splits splits against as many raw creates
// of the same mean size issued with the seeding's peak concurrency.
func figureF1(ctx context.Context, e *env, c config, s *seeded) (string, error) {
	if s.creates == 0 {
		return "", fmt.Errorf("no seeding creates observed between the planner's return and the publish")
	}
	rawSt, err := e.store("f1raw")
	if err != nil {
		return "", err
	}
	defer func() { _ = rawSt.Close(); _ = e.dropJob("f1raw") }()
	ws := make([]rawWrite, s.creates)
	for i := range ws {
		ws[i] = rawWrite{ks: store.Durable, op: opCreate, size: int(s.bytes / int64(s.creates))}
	}
	raw, err := runRaw(ctx, rawSt, "f1", ws, s.peak)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("F1 plan+seed %d splits: %s (seeding creates %d, mean %d B, peak concurrency %d, other durable writes %d; %s); raw %d creates x%d: %s; ratio %.2f (target <= 2)",
		c.splits, secs(s.took), s.creates, s.bytes/int64(s.creates), s.peak, s.other, s.work,
		s.creates, max(s.peak, 1), secs(raw), ratio(s.took, raw)), nil
}

// secs formats d in seconds with three decimals.
func secs(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }

// millis formats d in milliseconds with three decimals.
func millis(d time.Duration) string {
	return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond))
}

// ratio is a/b (0 if b is 0).
func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
