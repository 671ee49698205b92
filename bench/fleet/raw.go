package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spate-go/coordination/store"
)

// rawWrite is one write of a raw baseline: a Create of a fresh key, or an
// Update of a key created beforehand (untimed) at its current revision.
type rawWrite struct {
	ks   store.Keyspace
	op   op // opCreate or opUpdate
	size int
}

// runRaw issues ws against st from conc goroutines and returns how long
// they took, excluding the untimed creates that prepare the updates. Keys
// are "raw.<tag>.<i>", fresh per call.
func runRaw(ctx context.Context, st store.Store, tag string, ws []rawWrite, conc int) (time.Duration, error) {
	key := func(i int) string { return fmt.Sprintf("raw.%s.%d", tag, i) }
	revs, err := prepareRaw(ctx, st, ws, conc, key)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	err = issueRaw(ctx, st, ws, conc, key, revs)
	return time.Since(start), err
}

// prepareRaw creates the keys ws's updates rewrite, from conc goroutines,
// and returns their revisions by index of ws.
func prepareRaw(ctx context.Context, st store.Store, ws []rawWrite, conc int, key func(i int) string) ([]store.Revision, error) {
	revs := make([]store.Revision, len(ws))
	if err := fanOut(max(conc, 1), len(ws), func(i int) error {
		if ws[i].op != opUpdate {
			return nil
		}
		rev, _, err := st.Create(ctx, ws[i].ks, key(i), make([]byte, ws[i].size))
		revs[i] = rev
		return err
	}); err != nil {
		return nil, fmt.Errorf("preparing raw updates: %w", err)
	}
	return revs, nil
}

// issueRaw issues ws from conc goroutines, each update at the revision
// prepareRaw returned.
func issueRaw(ctx context.Context, st store.Store, ws []rawWrite, conc int, key func(i int) string, revs []store.Revision) error {
	return fanOut(max(conc, 1), len(ws), func(i int) error {
		var ok bool
		var err error
		if ws[i].op == opUpdate {
			_, ok, err = st.Update(ctx, ws[i].ks, key(i), make([]byte, ws[i].size), revs[i])
		} else {
			_, ok, err = st.Create(ctx, ws[i].ks, key(i), make([]byte, ws[i].size))
		}
		if err == nil && !ok {
			err = fmt.Errorf("raw %s of %s lost its precondition", ws[i].op, key(i))
		}
		return err
	})
}

// fanOut calls f(0..n-1) from conc goroutines and returns the first error.
func fanOut(conc, n int, f func(i int) error) error {
	var next atomic.Int64
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range min(conc, max(n, 1)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					next.Store(int64(n)) // stop the others
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// peakOverlap returns the most intervals [start, end) open at one instant.
func peakOverlap(ivs [][2]time.Time) int {
	type edge struct {
		at    time.Time
		delta int
	}
	edges := make([]edge, 0, 2*len(ivs))
	for _, iv := range ivs {
		edges = append(edges, edge{iv[0], 1}, edge{iv[1], -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at.Equal(edges[j].at) {
			return edges[i].delta < edges[j].delta // a close before an open at the same instant
		}
		return edges[i].at.Before(edges[j].at)
	})
	open, peak := 0, 0
	for _, e := range edges {
		open += e.delta
		peak = max(peak, open)
	}
	return peak
}

// percentile returns the q-quantile (0..1) of ds, sorting ds.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}
