package main

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

// figureF6 measures the heap one more worker costs per split in its view:
// the seeded job's heap after GC, then a second worker (MaxInFlight 1) joins
// and loads the whole job through its watches' snapshots, then the heap
// after GC again; the difference over the split count. It is the whole
// process's heap, so the NATS client's and the embedded server's share of
// the new watches counts too. The baseline is the value bytes the store
// holds per split (the seeding creates' sizes).
func figureF6(ctx context.Context, c config, s *seeded) (string, error) {
	before := settledHeap()
	if err := s.f.add(workerSpec{id: "viewer", maxInFlight: 1, reconcile: c.reconcile}); err != nil {
		return "", err
	}
	v := s.f.workers[len(s.f.workers)-1]
	loaded := func() bool {
		n := v.st.live.Load()
		return n >= 2 && v.st.loaded.Load() == n
	}
	err := s.f.wait(ctx, "the viewer's snapshots", loaded, func() string {
		return fmt.Sprintf("%d of %d open watches delivered their snapshot; %d opened", v.st.loaded.Load(), v.st.live.Load(), v.st.watches.Load())
	})
	if err != nil {
		return "", err
	}
	after := settledHeap()
	per := float64(int64(after)-int64(before)) / float64(c.splits)
	return fmt.Sprintf("F6 heap per split in view, %d splits: %.0f B (heap %.1f -> %.1f MiB, %d watches opened); store values %d B per split; target <= 1024 B",
		c.splits, per, mib(before), mib(after), v.st.watches.Load(), s.bytes/int64(max(c.splits, 1))), nil
}

// settledHeap returns the live heap after GC once two readings 100ms apart
// agree within 1 % (or after ten readings), so that events still being
// applied after the snapshot was handed over have finished.
func settledHeap() uint64 {
	read := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	last := read()
	for range 10 {
		time.Sleep(100 * time.Millisecond) // a measurement interval, not a wait for correctness
		cur := read()
		if diff := int64(cur) - int64(last); diff < int64(last/100) && -diff < int64(last/100) {
			return cur
		}
		last = cur
	}
	return last
}

// mib converts bytes to MiB.
func mib(b uint64) float64 { return float64(b) / (1 << 20) }
