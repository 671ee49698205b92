package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spate-go/coordination/store"
)

// claimed is the F2 fleet once every split is held, with what F2 measured.
type claimed struct {
	f         *fleet
	took      time.Duration // plan published → every split held
	total     time.Duration // Start → every split held
	heldAtPub int
	writes    int        // landed split-key writes from Start to every split held
	seeds     []rawWrite // the seeding creates (Durable creates of split keys before the publish)
	early     []rawWrite // the first other write of each (keyspace, key), landed before the publish
	late      []rawWrite // the same, landed after it
	work      string     // CPU and watch events from Start to every split held (fleet.work)
}

// claim starts c.workers workers (MaxInFlight c.maxInFlight, weights 1) on
// a fresh job of c.splits splits and waits until every split is held. It
// records every landed write to a split's keys: the seeding creates, and
// the first other write of each (keyspace, key), which is what the claims
// need at least (renewals and retries are the protocol's own cost). Claims
// that land before the plan is published (the current code claims while
// it seeds) are kept apart from those after.
func claim(ctx context.Context, e *env, c config) (*claimed, error) {
	f, err := startFleet(e, "f2", c.splits, nil)
	if err != nil {
		return nil, err
	}
	cl := &claimed{f: f}
	var mu sync.Mutex
	seen := make(map[string]bool)
	f.setHook(func(_ int, w write) {
		if !w.ok || w.op == opDelete || !isSplitKey(w.key) {
			return
		}
		p := f.publishedAt()
		mu.Lock()
		defer mu.Unlock()
		cl.writes++
		rw := rawWrite{ks: w.ks, op: w.op, size: w.size}
		if w.ks == store.Durable && w.op == opCreate && p.IsZero() {
			cl.seeds = append(cl.seeds, rw)
			return
		}
		if k := w.ks.String() + "|" + w.key; !seen[k] {
			seen[k] = true
			if p.IsZero() || w.start.Before(p) {
				cl.early = append(cl.early, rw)
			} else {
				cl.late = append(cl.late, rw)
			}
		}
	})
	for i := range c.workers {
		if err := f.add(workerSpec{id: fmt.Sprintf("w%d", i), maxInFlight: c.maxInFlight, reconcile: c.reconcile}); err != nil {
			return cl, err
		}
	}
	if err := f.waitPublished(ctx); err != nil {
		return cl, err
	}
	cl.heldAtPub = f.held()
	if err := f.wait(ctx, "every split held", func() bool { return f.held() >= c.splits },
		func() string { return fmt.Sprintf("%d of %d splits held", f.held(), c.splits) }); err != nil {
		return cl, err
	}
	end := time.Now()
	cl.work = f.work()
	f.setHook(nil)
	cl.took = end.Sub(f.publishedAt())
	cl.total = end.Sub(f.started)
	return cl, nil
}

// figureF2 compares the claim window (publish → every split held) with the
// raw writes of the claims that landed in it, and the whole run (Start →
// every split held) with the raw writes of the seeding and every claim,
// each issued from as many goroutines as there are workers.
func figureF2(ctx context.Context, e *env, c config, cl *claimed) (string, error) {
	rawSt, err := e.store("f2raw")
	if err != nil {
		return "", err
	}
	defer func() { _ = rawSt.Close(); _ = e.dropJob("f2raw") }()
	late, err := runRaw(ctx, rawSt, "late", cl.late, c.workers)
	if err != nil {
		return "", err
	}
	all := slices.Concat(cl.seeds, cl.early, cl.late)
	whole, err := runRaw(ctx, rawSt, "all", all, c.workers)
	if err != nil {
		return "", err
	}
	window := fmt.Sprintf("raw %d writes [%s] from %d goroutines: %s; ratio %.2f (target <= 2)",
		len(cl.late), mix(cl.late), c.workers, secs(late), ratio(cl.took, late))
	if len(cl.late) == 0 {
		window = "raw: none (every claim landed before the publish); ratio n/a (target <= 2)"
	}
	return fmt.Sprintf("F2 %d workers claim %d splits (MaxInFlight %d): publish -> all held %s (%d held at publish); %s | Start -> all held %s (%s); raw %d writes [%s]: %s; ratio %.2f (%d split-key writes landed)",
		c.workers, c.splits, c.maxInFlight, secs(cl.took), cl.heldAtPub, window,
		secs(cl.total), cl.work, len(all), mix(all), secs(whole), ratio(cl.total, whole), cl.writes), nil
}

// mix describes raw writes as "<keyspace> <op> <count> (<mean> B)" groups.
func mix(ws []rawWrite) string {
	type group struct {
		n     int
		bytes int
	}
	groups := make(map[string]*group)
	for _, w := range ws {
		k := w.ks.String() + " " + w.op.String()
		g := groups[k]
		if g == nil {
			g = &group{}
			groups[k] = g
		}
		g.n++
		g.bytes += w.size
	}
	var parts []string
	for k, g := range groups {
		parts = append(parts, fmt.Sprintf("%s %d (%d B)", k, g.n, g.bytes/g.n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
