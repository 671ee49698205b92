package actors

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
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// BenchmarkPlacementEvents runs the plan, seed and claim of 10,000 splits
// by 8 workers on one memstore, so that nearly all the CPU is the
// workers' own: every worker applies every split record event (the
// seeding creates and the claims) through its watch actor's fan-out. It
// reports the process CPU per split-record event per worker
// (cpu-µs/event), the wall time to every split held, the events each
// worker applied and the watches it opened (2 unless a watch broke and was
// opened again). The workers run without the startup hold (StartupGrace
// 0), which would only add idle time. Profile it with -cpuprofile.
func BenchmarkPlacementEvents(b *testing.B) {
	const workers, splits = 8, 10_000
	for b.Loop() {
		cpu, wall, st := placementRun(b, workers, splits)
		events := st.splitEvents.Load()
		b.ReportMetric(float64(cpu.Microseconds())/float64(events), "cpu-µs/event")
		b.ReportMetric(wall.Seconds(), "s-to-all-held")
		b.ReportMetric(float64(events)/workers, "events/worker")
		b.ReportMetric(float64(st.watches.Load())/workers, "watches/worker")
	}
}

// placementRun starts workers on a fresh job of n splits and returns the
// process CPU and wall time from their start to every split held, and the
// store, which counted the watches and their split-record events.
func placementRun(b *testing.B, workers, n int) (cpu, wall time.Duration, st *countingWatches) {
	b.Helper()
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		b.Fatal(err)
	}
	cfg := coordination.DefaultConfig()
	cfg.StartupGrace = 0
	cfg.Logger = discardLogger()
	mem := memstore.New(cfg.LeaseDuration)
	st = &countingWatches{Store: mem}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("s-%05d", i)
	}
	p := finalPlan(ids...)
	var held atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	cpu0, wall0 := processCPU(), time.Now()
	for i := range workers {
		cfg.InstanceID = fmt.Sprintf("w%d", i)
		cfg.MaxInFlight = n
		c, err := Spawn(e, st, cfg)
		if err != nil {
			b.Fatal(err)
		}
		w := coordination.NewWaker()
		c.SetWaker(w)
		if err := c.Start(p); err != nil {
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
	return cpu, wall, st
}

// countingWatches counts the watches opened and the split-record events
// they deliver.
type countingWatches struct {
	*memstore.Store
	watches     atomic.Int64
	splitEvents atomic.Int64
}

// Watch counts the Put and Delete events of split records ("job.split.").
func (s *countingWatches) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	w, err := s.Store.Watch(ctx, ks, prefix)
	if err != nil {
		return nil, err
	}
	s.watches.Add(1)
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

// BenchmarkRecordFanout measures what applying one split-record event costs
// a worker: 8 live workers on one memstore, with an open plan of no splits
// (so nothing is seeded) and no startup hold, see the benchmark write
// 10,000 split records in chunks of 500, each chunk once the workers'
// watches have taken the previous one, so that no watch falls behind far
// enough to break; the figure stops once every worker has handled every
// watch-fed message (its hand-off credit is back to zero). It reports the
// process CPU per event per worker (cpu-µs/event), the leader's assignment
// evaluations and the writes themselves included.
func BenchmarkRecordFanout(b *testing.B) {
	const workers, splits, chunk = 8, 10_000, 500
	for b.Loop() {
		e, err := actor.NewEngine(actor.NewEngineConfig())
		if err != nil {
			b.Fatal(err)
		}
		cfg := coordination.DefaultConfig()
		cfg.StartupGrace = 0
		cfg.Logger = discardLogger()
		mem := memstore.New(cfg.LeaseDuration)
		st := &countingWatches{Store: mem}
		p := openPlan{}
		var cs []*Coordinator
		for i := range workers {
			cfg.InstanceID = fmt.Sprintf("w%d", i)
			c, err := Spawn(e, st, cfg)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Start(p); err != nil {
				b.Fatal(err)
			}
			cs = append(cs, c)
		}
		idle := func() bool {
			for _, c := range cs {
				c.v.backlog.mu.Lock()
				n := c.v.backlog.n
				c.v.backlog.mu.Unlock()
				if n != 0 {
					return false
				}
			}
			return true
		}
		waitFor(b, 10*time.Millisecond, func() bool { return st.watches.Load() == 2*workers && planned(b, mem) && idle() })
		fp := protocol.Fingerprint(p.Fingerprint())
		cpu0 := processCPU()
		for n := 0; n < splits; {
			for end := n + chunk; n < end; n++ {
				id := coordination.SplitID(fmt.Sprintf("s-%05d", n))
				rec := protocol.SeedSplit(id, fp, 1, nil, 0)
				if _, _, err := mem.Create(context.Background(), store.Durable, protocol.SplitKey(id), protocol.EncodeSplit(rec)); err != nil {
					b.Fatal(err)
				}
			}
			waitFor(b, 100*time.Microsecond, func() bool { return st.splitEvents.Load() >= int64(n*workers) })
		}
		waitFor(b, 100*time.Microsecond, idle)
		cpu := processCPU() - cpu0
		b.ReportMetric(float64(cpu.Microseconds())/float64(splits*workers), "cpu-µs/event")
		b.ReportMetric(float64(st.watches.Load())/workers, "watches/worker")
		for _, c := range cs {
			c.Abort()
		}
		_ = mem.Close()
	}
}

// openPlan is a Planner with an open plan of no splits.
type openPlan struct{}

func (openPlan) Fingerprint() string { return "fanout:v1" }

func (openPlan) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	return coordination.SplitPlan{Finality: coordination.PlanOpen}, nil
}

// planned reports whether the job's plan record exists.
func planned(b *testing.B, st store.Store) bool {
	_, ok, err := st.Get(context.Background(), store.Durable, protocol.KeyPlan)
	if err != nil {
		b.Fatal(err)
	}
	return ok
}

// waitFor polls cond every period for up to a minute.
func waitFor(b *testing.B, period time.Duration, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatal("condition not met within a minute")
		}
		time.Sleep(period) // polling a counter, not waiting for correctness
	}
}
