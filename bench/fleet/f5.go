package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// f5Bucket is the raw KV bucket of F5's baseline.
const f5Bucket = "bench_raw_f5"

// figureF5 times c.samples Commits through a one-worker coordinator,
// interleaved with raw KV Updates of the same value size on the same server
// and Updates through the job's store (natsstore or pgstore), so that the
// line splits the Commit's ratio into the store's share and the
// coordinator's: A B C A B C ...
func figureF5(ctx context.Context, e *env, c config) (string, error) {
	f, err := startFleet(e, "f5", 1, []workerSpec{{id: "committer", maxInFlight: 1, reconcile: c.reconcile}})
	if err != nil {
		return "", err
	}
	defer func() { _ = f.stop() }()
	var size atomic.Int64
	f.setHook(func(_ int, w write) {
		if w.ks == store.Durable && w.op == opUpdate && w.ok && isSplitKey(w.key) {
			size.Store(int64(w.size))
		}
	})
	if err := f.waitHeld(ctx, 1, 0); err != nil {
		return "", err
	}
	w := f.workers[0]
	var id coordination.SplitID
	var mark int64
	w.do(func() {
		for s, m := range w.held {
			id, mark = s, m
		}
	})
	commit := func() (time.Duration, error) {
		mark++
		t := time.Now()
		err := w.c.Commit(id, coordination.SplitProgress{Watermark: mark, State: []byte("bench")})
		return time.Since(t), err
	}
	var werr error
	w.do(func() { _, werr = commit() }) // learns the record's size
	if werr != nil {
		return "", fmt.Errorf("first commit: %w", werr)
	}
	val := make([]byte, size.Load())

	kv, err := e.rawStore(ctx, f5Bucket)
	if err != nil {
		return "", err
	}
	defer func() { _ = e.dropJob("f5raw", f5Bucket) }()
	kvRev, err := kv.create(ctx, val)
	if err != nil {
		return "", fmt.Errorf("raw kv create: %w", err)
	}
	rawSt, err := e.store("f5raw")
	if err != nil {
		return "", err
	}
	defer func() { _ = rawSt.Close() }()
	stRev, _, err := rawSt.Create(ctx, store.Durable, "raw", val)
	if err != nil {
		return "", fmt.Errorf("raw store create: %w", err)
	}

	var a, b, s []time.Duration
	ran := w.do(func() {
		for range c.samples {
			if werr = ctx.Err(); werr != nil {
				return
			}
			d, err := commit()
			if err != nil {
				werr = fmt.Errorf("commit: %w", err)
				return
			}
			a = append(a, d)
			t := time.Now()
			if kvRev, err = kv.update(ctx, val, kvRev); err != nil {
				werr = fmt.Errorf("raw kv update: %w", err)
				return
			}
			b = append(b, time.Since(t))
			t = time.Now()
			var ok bool
			if stRev, ok, err = rawSt.Update(ctx, store.Durable, "raw", val, stRev); err != nil || !ok {
				werr = errors.Join(fmt.Errorf("raw store update lost or failed"), err)
				return
			}
			s = append(s, time.Since(t))
		}
	})
	if !ran {
		return "", f.failed()
	}
	if errors.Is(werr, context.DeadlineExceeded) {
		return "", &timeoutError{what: "the commit samples", after: c.timeout, progress: fmt.Sprintf("%d of %d samples", len(a), c.samples)}
	}
	if werr != nil {
		return "", werr
	}
	a50, a99 := percentile(a, 0.50), percentile(a, 0.99)
	b50, b99 := percentile(b, 0.50), percentile(b, 0.99)
	s50, s99 := percentile(s, 0.50), percentile(s, 0.99)
	return fmt.Sprintf("F5 Commit (%d B record, %d samples) p50 %s p99 %s; %s p50 %s p99 %s; ratio p50 %.2f (target <= 1.3) p99 %.2f (target <= 2); store Update p50 %s p99 %s, ratio p50 %.2f p99 %.2f (the store's share; the rest is the coordinator's)",
		len(val), len(a), millis(a50), millis(a99), kv.name(), millis(b50), millis(b99), ratio(a50, b50), ratio(a99, b99), millis(s50), millis(s99), ratio(s50, b50), ratio(s99, b99)), nil
}
