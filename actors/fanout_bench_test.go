package actors_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// BenchmarkPlacementEvents runs the plan, seed and claim of 10,000 splits
// by 8 workers on one memstore, so that nearly all the CPU is the
// workers' own: every worker applies every split record event (the
// seeding creates and the claims) through its watch actor's fan-out. It
// reports the process CPU per split-record event per worker
// (cpu-µs/event), the wall time to every split held, and the events each
// worker applied. Profile it with -cpuprofile.
func BenchmarkPlacementEvents(b *testing.B) {
	const workers, splits = 8, 10_000
	for b.Loop() {
		cpu, wall, events := placementRun(b, workers, splits)
		b.ReportMetric(float64(cpu.Microseconds())/float64(events), "cpu-µs/event")
		b.ReportMetric(wall.Seconds(), "s-to-all-held")
		b.ReportMetric(float64(events)/workers, "events/worker")
	}
}

// placementRun starts workers on a fresh job of n splits and returns the
// process CPU and wall time from their start to every split held, and the
// split-record events their watches delivered.
func placementRun(b *testing.B, workers, n int) (cpu, wall time.Duration, events int64) {
	b.Helper()
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		b.Fatal(err)
	}
	cfg := coordination.DefaultConfig()
	mem := memstore.New(cfg.LeaseDuration)
	st := &countingWatches{Store: mem}
	ids := make([]coordination.SplitID, n)
	for i := range ids {
		ids[i] = coordination.SplitID(fmt.Sprintf("s-%05d", i))
	}
	var held atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	cpu0, wall0 := processCPU(), time.Now()
	for i := range workers {
		cfg.InstanceID = fmt.Sprintf("w%d", i)
		cfg.MaxInFlight = n
		c, err := actors.Spawn(e, st, cfg)
		if err != nil {
			b.Fatal(err)
		}
		w := coordination.NewWaker()
		c.SetWaker(w)
		if err := c.Start(onePlan{ids: ids}); err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			defer c.Abort()
			for {
				select {
				case <-stop:
					return
				case <-w.C():
				}
				evs, err := c.Poll()
				if err != nil {
					b.Error(err)
					return
				}
				for _, ev := range evs {
					if _, ok := ev.(coordination.Gained); ok {
						held.Add(1)
					}
				}
			}
		})
	}
	// Wait until every split is held, or nothing happened for stall (a
	// claim pipeline that waits for the next heartbeat): then the figures
	// stop at the last change and the run is reported as stalled.
	const stall = 2 * time.Second
	last, lastAt, lastCPU := int64(-1), time.Now(), processCPU()
	for held.Load() < int64(n) {
		if now := held.Load() + st.splitEvents.Load(); now != last {
			last, lastAt, lastCPU = now, time.Now(), processCPU()
		} else if time.Since(lastAt) > stall {
			b.Logf("stalled: %d of %d splits held, no event for %s", held.Load(), n, stall)
			break
		}
		time.Sleep(time.Millisecond) // polling a counter, not waiting for correctness
	}
	cpu, wall = processCPU()-cpu0, time.Since(wall0)
	if held.Load() < int64(n) {
		cpu, wall = lastCPU-cpu0, lastAt.Sub(wall0)
	}
	close(stop)
	wg.Wait()
	_ = mem.Close()
	return cpu, wall, st.splitEvents.Load()
}

// countingWatches counts the split-record events its watches deliver.
type countingWatches struct {
	*memstore.Store
	splitEvents atomic.Int64
}

// Watch counts the Put and Delete events of split records ("job.split.").
func (s *countingWatches) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	w, err := s.Store.Watch(ctx, ks, prefix)
	if err != nil {
		return nil, err
	}
	out := make(chan store.WatchEvent)
	go func() {
		defer close(out)
		for ev := range w.Events() {
			if ev.Kind != store.SnapshotDone && len(ev.Entry.Key) > 10 && ev.Entry.Key[:10] == "job.split." {
				s.splitEvents.Add(1)
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return &countedWatcher{Watcher: w, out: out}, nil
}

// countedWatcher is a watch whose events pass through the counter.
type countedWatcher struct {
	store.Watcher
	out chan store.WatchEvent
}

// Events returns the counted events.
func (w *countedWatcher) Events() <-chan store.WatchEvent { return w.out }

// processCPU is the process's user plus system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
