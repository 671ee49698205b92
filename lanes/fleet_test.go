package lanes_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"
	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/lanes"
	"github.com/spate-go/coordination/store/memstore"
	"github.com/spate-go/coordination/testkit"
)

// perRecord is the (bubble's fake) time a record takes to process, so that
// lanes are still reading when workers join, leave and crash.
const perRecord = 25 * time.Millisecond

// commitInterval is the fleet runs' driver.WithCommitInterval.
const commitInterval = 100 * time.Millisecond

// dataset is the records of a fleet run: sorted, distinct positions.
type dataset struct {
	rows []int64
}

// from returns the records at or after p and before end.
func (d dataset) from(p, end int64) []int64 {
	i := sort.Search(len(d.rows), func(i int) bool { return d.rows[i] >= p })
	j := sort.Search(len(d.rows), func(i int) bool { return d.rows[i] >= end })
	return d.rows[i:max(i, j)]
}

// keyOf is a record's key in a key-ranged run: bytewise order is numeric
// order.
func keyOf(row int64) []byte { return fmt.Appendf(nil, "row/%08d", row) }

// counter counts deliveries per record, from every lane of every worker.
type counter struct {
	mu sync.Mutex
	n  map[int64]int
}

func (c *counter) add(row int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[row]++
}

// schedule is one generated fleet run.
type schedule struct {
	keys    bool     // key ranges instead of offsets
	batch   int      // records per claim
	workers int      // started at once
	events  []event  // then, in order
	bounds  []int64  // split boundaries, from 0 to the end of the data
	weights []uint64 // per split
	data    dataset
}

// event is one change to the fleet during a run.
type event struct {
	after time.Duration
	op    string // "join", "leave", "crash"
}

func drawSchedule(t *rapid.T, crashes bool) schedule {
	s := schedule{
		keys:    rapid.Bool().Draw(t, "keys"),
		batch:   rapid.IntRange(1, 8).Draw(t, "batch"),
		workers: rapid.IntRange(1, 3).Draw(t, "workers"),
	}
	end := int64(rapid.IntRange(50, 3000).Draw(t, "span"))
	seen := map[int64]bool{}
	count := rapid.IntRange(100, 300).Draw(t, "count")
	for _, r := range rapid.SliceOfN(rapid.Int64Range(0, end-1), count, count).Draw(t, "rows") {
		if !seen[r] {
			seen[r] = true
			s.data.rows = append(s.data.rows, r)
		}
	}
	slices.Sort(s.data.rows)
	cuts := rapid.SliceOfNDistinct(rapid.Int64Range(1, end-1), 0, 5, rapid.ID).Draw(t, "cuts")
	slices.Sort(cuts)
	s.bounds = append(append([]int64{0}, cuts...), end)
	for range len(s.bounds) - 1 {
		s.weights = append(s.weights, uint64(rapid.IntRange(1, 100).Draw(t, "weight")))
	}
	ops := []string{"join", "leave"}
	if crashes {
		ops = append(ops, "crash")
	}
	for i := range rapid.IntRange(0, 4).Draw(t, "events") {
		s.events = append(s.events, event{
			after: time.Duration(rapid.IntRange(0, 1500).Draw(t, fmt.Sprint("after", i))) * time.Millisecond,
			op:    rapid.SampledFrom(ops).Draw(t, fmt.Sprint("op", i)),
		})
	}
	return s
}

// planner returns the run's plan.
func (s schedule) planner() (coordination.Planner, error) {
	if s.keys {
		var splits []lanes.Split[[]byte]
		for i := range s.weights {
			end := keyOf(s.bounds[i+1])
			if i == len(s.weights)-1 {
				end = nil // the last split runs to the end of the key space
			}
			splits = append(splits, lanes.Split[[]byte]{ID: coordination.SplitID(fmt.Sprint("k", i)), Range: lanes.Range[[]byte]{Start: keyOf(s.bounds[i]), End: end}, Weight: s.weights[i]})
		}
		return lanes.Planner(splits)
	}
	var splits []lanes.Split[int64]
	for i := range s.weights {
		splits = append(splits, lanes.Split[int64]{ID: coordination.SplitID(fmt.Sprint("o", i)), Range: lanes.Range[int64]{Start: s.bounds[i], End: s.bounds[i+1]}, Weight: s.weights[i]})
	}
	return lanes.Planner(splits)
}

// source returns a worker's source: a batch reader over the dataset that
// claims each batch's last record, then processes the batch.
func (s schedule) source(out *counter) driver.SourceReader {
	process := func(rows []int64) {
		for _, r := range rows {
			out.add(r)
			time.Sleep(perRecord)
		}
	}
	if s.keys {
		return lanes.NewSource(func(ctx context.Context, lane *lanes.Lane[[]byte]) error {
			for {
				next, end := lane.Next(), lane.End()
				i := sort.Search(len(s.data.rows), func(i int) bool { return bytes.Compare(keyOf(s.data.rows[i]), next) >= 0 })
				var rows []int64
				for ; i < len(s.data.rows) && len(rows) < s.batch; i++ {
					if len(end) > 0 && bytes.Compare(keyOf(s.data.rows[i]), end) >= 0 {
						break
					}
					rows = append(rows, s.data.rows[i])
				}
				if len(rows) == 0 {
					return nil
				}
				time.Sleep(perRecord) // the query's latency: a cut may land meanwhile
				if !lane.Claim(keyOf(rows[len(rows)-1])) {
					return nil
				}
				process(rows)
			}
		}, lanes.Options{})
	}
	return lanes.NewSource(func(ctx context.Context, lane *lanes.Lane[int64]) error {
		for {
			rows := s.data.from(lane.Next(), lane.End())
			if len(rows) == 0 {
				return nil
			}
			rows = rows[:min(len(rows), s.batch)]
			time.Sleep(perRecord) // the query's latency: a cut may land meanwhile
			if !lane.Claim(rows[len(rows)-1]) {
				return nil
			}
			process(rows)
		}
	}, lanes.Options{})
}

// worker is one running member of a fleet run.
type worker struct {
	coord  *actors.Coordinator
	cancel context.CancelFunc
	done   chan error
}

// runFleet runs s in a synctest bubble and returns the deliveries and the
// number of runtime cuts; problems go to fail.
func runFleet(t *testing.T, s schedule) (deliveries map[int64]int, cuts, crashes int) {
	out := &counter{n: map[int64]int{}}
	plan, err := s.planner()
	if err != nil {
		t.Fatal(err)
	}
	logs := &strings.Builder{}
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelInfo}))
	synctest.Test(t, func(t *testing.T) {
		e, err := actor.NewEngine(actor.NewEngineConfig())
		if err != nil {
			t.Fatal(err)
		}
		cfg := testkit.HarnessConfig()
		cfg.StartupGrace = 0
		cfg.CutInterval = 200 * time.Millisecond
		cfg.MinCutWeight = 1 // the runs' weights are 1 to 100; the kit's MinResidual keeps two records
		cfg.Logger = log
		st := memstore.New(cfg.LeaseDuration)
		defer st.Close()
		var live []*worker
		var all []*worker
		n := 0
		start := func() {
			n++
			c := cfg
			c.InstanceID = fmt.Sprint("w", n)
			coord, err := actors.Spawn(e, st, c)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			w := &worker{coord: coord, cancel: cancel, done: make(chan error, 1)}
			go func() {
				w.done <- driver.Run(ctx, coord, s.source(out), driver.WithPlanner(plan), driver.WithCommitInterval(commitInterval))
			}()
			live, all = append(live, w), append(all, w)
		}
		for range s.workers {
			start()
		}
		for _, ev := range s.events {
			time.Sleep(ev.after)
			switch {
			case ev.op == "join":
				start()
			case len(live) > 1 && ev.op == "leave":
				live[0].cancel()
				<-live[0].done
				live = live[1:]
			case len(live) > 1 && ev.op == "crash":
				live[0].coord.Abort()
				crashes++
				live[0].cancel()
				<-live[0].done
				live = live[1:]
			}
		}
		for _, w := range live {
			if err := <-w.done; err != nil {
				t.Errorf("a surviving worker's run ended with %v", err)
			}
		}
	})
	logMu.Lock()
	cuts = strings.Count(logs.String(), "split cut at runtime")
	logMu.Unlock()
	return out.n, cuts, crashes
}

// writerFunc is an io.Writer of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestFleetDeliversEveryPositionOnce is the kit's system property: over
// random ranges, weights, sparse positions and batch sizes, with workers
// joining and leaving (cooperative drains) and runtime cuts, every record is
// delivered exactly once; with crashes, at least once.
func TestFleetDeliversEveryPositionOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fleets")
	}
	totalCuts := 0
	for _, crashes := range []bool{false, true} {
		rapid.Check(t, func(rt *rapid.T) {
			s := drawSchedule(rt, crashes)
			got, cuts, crashed := runFleet(t, s)
			totalCuts += cuts
			dups := 0
			for _, r := range s.data.rows {
				switch n := got[r]; {
				case n == 0:
					rt.Fatalf("record %d was never delivered", r)
				case n > 1 && !crashes:
					rt.Fatalf("record %d was delivered %d times with no crash", r, n)
				default:
					dups += n - 1
				}
			}
			// A crash replays, per split its worker held, what was acknowledged
			// after the last commit: one commit interval of records and the
			// batch in hand.
			perSplit := int(commitInterval/perRecord) + 2*s.batch
			if bound := crashed * testkit.HarnessConfig().MaxInFlight * perSplit; dups > bound {
				rt.Fatalf("%d duplicates after %d crashes; at most one commit interval per held split is %d", dups, crashed, bound)
			}
			if len(got) != len(s.data.rows) {
				rt.Fatalf("%d records delivered, the data has %d", len(got), len(s.data.rows))
			}
		})
	}
	if totalCuts == 0 {
		t.Errorf("no schedule cut a split at runtime: the property did not exercise cuts")
	}
}
