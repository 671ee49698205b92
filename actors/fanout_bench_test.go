package actors

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

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
		cfg.Logger = workertest.DiscardLogger()
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
				if c.v.Backlog.Pending() != 0 {
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
			if ev.Kind != store.SnapshotDone && strings.HasPrefix(ev.Entry.Key, protocol.PrefixSplit) {
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
