package driver_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/store/memstore"
	"github.com/spate-go/coordination/testkit"
)

// The end-to-end tests run real coordinators (actors.Spawn) under drivers on
// one memstore, inside a synctest bubble: the coordinators use the real
// clock, which the bubble fakes, so leases expire and drivers park in fake
// time with no sleeps on the wall clock. They use the fleet's member
// configuration (testkit.HarnessConfig) but not the fleet itself, whose
// members are pumped on a mock clock rather than parked in drivers.

const (
	rowsPerRead = 7 // rows a lane delivers per control-loop turn
	// readTime is the (bubble's fake) time a turn that delivers rows takes.
	// Without it a worker would deliver the whole ledger at one instant, and
	// whether the second worker joins before the first finished would be a
	// matter of goroutine scheduling.
	readTime = 100 * time.Millisecond
)

// ledger is the job of the two-worker tests: 1000 rows in 8 splits.
var ledger = ledgerPlanner{rows: 1000, splits: 8}

// ledgerPlanner plans rows rows as splits range splits; the descriptor is
// the range "lo-hi" (hi exclusive).
type ledgerPlanner struct{ rows, splits int }

func (ledgerPlanner) Fingerprint() string { return "ledger-v1" }
func (p ledgerPlanner) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	var plan coordination.SplitPlan
	per := p.rows / p.splits
	for i := range p.splits {
		lo, hi := i*per, (i+1)*per
		if i == p.splits-1 {
			hi = p.rows
		}
		plan.Splits = append(plan.Splits, coordination.PlannedSplit{Spec: coordination.SplitSpec{
			ID:         coordination.SplitID(fmt.Sprintf("rows-%d", i)),
			Descriptor: []byte(fmt.Sprintf("%d-%d", lo, hi)),
			Weight:     1,
		}})
	}
	plan.Finality = coordination.PlanFinal
	return plan, nil
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// deliveries counts every row delivered by any worker.
type deliveries struct {
	mu    sync.Mutex
	count map[int64]int
}

func (d *deliveries) add(row int64) {
	d.mu.Lock()
	d.count[row]++
	d.mu.Unlock()
}

// checkRows fails the test unless exactly rows 0..rows-1 were delivered; it
// returns the number of duplicate deliveries.
func (d *deliveries) checkRows(t testing.TB, rows int64) int {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	dups := 0
	for row := range rows {
		switch n := d.count[row]; {
		case n == 0:
			t.Errorf("row %d was never delivered", row)
		case n > 1:
			dups += n - 1
		}
	}
	for row := range d.count {
		if row < 0 || row >= rows {
			t.Errorf("row %d is outside the ledger", row)
		}
	}
	return dups
}

// ledgerLane is one open lane of the ledger source.
type ledgerLane struct {
	partition driver.PartitionID
	lo, hi    int64
	start     int64 // where the lane resumed
	next      int64 // next row to deliver; everything below is acknowledged
	draining  bool
}

// ledgerSource is one worker's Source over the in-process ledger. Rows are
// acknowledged as soon as they are delivered, so a drain cut is always the
// lane's next row.
type ledgerSource struct {
	out       *deliveries
	lanes     map[coordination.SplitID]*ledgerLane
	finishing []coordination.SplitID
}

func parseRange(desc []byte) (lo, hi int64, err error) {
	a, b, ok := strings.Cut(string(desc), "-")
	if !ok {
		return 0, 0, fmt.Errorf("descriptor %q is not a range", desc)
	}
	if lo, err = strconv.ParseInt(a, 10, 64); err == nil {
		hi, err = strconv.ParseInt(b, 10, 64)
	}
	return lo, hi, err
}

func (s *ledgerSource) OpenSplit(o driver.Opening) error {
	lo, hi, err := parseRange(o.Split.Descriptor)
	if err != nil {
		return err
	}
	next := lo
	if o.Resume != nil {
		next = o.Resume.Watermark
	}
	s.lanes[o.Split.ID] = &ledgerLane{partition: o.Partition, lo: lo, hi: hi, start: next, next: next}
	return nil
}

func (s *ledgerSource) ValidateResume(spec coordination.SplitSpec, p coordination.SplitProgress) error {
	lo, hi, err := parseRange(spec.Descriptor)
	if err != nil {
		return err
	}
	if p.Watermark < lo || p.Watermark > hi {
		return fmt.Errorf("watermark %d outside %d-%d", p.Watermark, lo, hi)
	}
	return nil
}

func (s *ledgerSource) EncodeCommit(split coordination.SplitID, w int64) (coordination.SplitProgress, error) {
	l, ok := s.lanes[split]
	if !ok {
		return coordination.SplitProgress{}, fmt.Errorf("split %s is not open", split)
	}
	return coordination.SplitProgress{Watermark: w, Completed: w == l.hi && !l.draining}, nil
}

func (s *ledgerSource) Sweep(split coordination.SplitID) (*coordination.SplitProgress, error) {
	// A lane that resumed at its end has nothing to deliver and will never
	// produce a watermark: it is complete.
	if l, ok := s.lanes[split]; ok && !l.draining && l.start == l.hi {
		return &coordination.SplitProgress{Watermark: l.hi, Completed: true}, nil
	}
	return nil, nil
}

func (s *ledgerSource) CloseSplit(split coordination.SplitID) { delete(s.lanes, split) }

func (s *ledgerSource) TakeFinishing() []coordination.SplitID {
	f := s.finishing
	s.finishing = nil
	return f
}

func (s *ledgerSource) BeginRevoke(split coordination.SplitID) bool {
	l, ok := s.lanes[split]
	if !ok || l.next == l.hi {
		return false
	}
	l.draining = true
	return true
}

func (s *ledgerSource) DrainReady(split coordination.SplitID) (*coordination.SplitProgress, error) {
	l, ok := s.lanes[split]
	if !ok || !l.draining {
		return nil, nil
	}
	return &coordination.SplitProgress{Watermark: l.next}, nil
}

// read delivers up to rowsPerRead rows from every live lane, in split order,
// and returns the acknowledged watermarks of the lanes that advanced.
func (s *ledgerSource) read() []driver.Watermark {
	var ws []driver.Watermark
	for _, id := range slices.Sorted(maps.Keys(s.lanes)) {
		l := s.lanes[id]
		if l.draining || l.next == l.hi {
			continue
		}
		end := min(l.next+rowsPerRead, l.hi)
		for ; l.next < end; l.next++ {
			s.out.add(l.next)
		}
		if l.next == l.hi {
			s.finishing = append(s.finishing, id)
		}
		ws = append(ws, driver.Watermark{Partition: l.partition, Value: l.next})
	}
	return ws
}

// ledgerWorker is one worker: a coordinator, its driver and its source.
type ledgerWorker struct {
	id    string
	coord *actors.Coordinator
	d     *driver.Driver
	src   *ledgerSource
	turns int // control-loop turns that delivered rows

	heldAtAbort int // open lanes when the worker crashed
}

func startWorker(t testing.TB, e *actor.Engine, st *memstore.Store, id string, job ledgerPlanner, out *deliveries, log *slog.Logger) *ledgerWorker {
	t.Helper()
	cfg := testkit.HarnessConfig()
	cfg.InstanceID = id
	cfg.Logger = log
	// Move splits to a worker as soon as it joins: with the default grace
	// the first worker could finish the ledger before the second holds any.
	cfg.StartupGrace = 0
	coord, err := actors.Spawn(e, st, cfg)
	if err != nil {
		t.Fatalf("Spawn %s: %v", id, err)
	}
	w := &ledgerWorker{id: id, coord: coord, src: &ledgerSource{out: out, lanes: map[coordination.SplitID]*ledgerLane{}}}
	w.d = driver.New(coord, w.src, driver.WithLogger(log.With("driver", id)))
	if err := w.d.Start(job); err != nil {
		t.Fatalf("Start %s: %v", id, err)
	}
	return w
}

// run is the worker's control loop. It returns "drained" after a clean
// Shutdown, "aborted" when abortAfter turns delivered rows (0: never), or an
// error text.
func (w *ledgerWorker) run(abortAfter int) string {
	for {
		ev, err := w.d.PollEvents(50 * time.Millisecond)
		if err != nil {
			if coordination.KindOf(err) == coordination.Retryable {
				continue
			}
			_ = w.d.Shutdown(nil)
			return fmt.Sprintf("%s: PollEvents: %v", w.id, err)
		}
		if _, ok := ev.(driver.Drained); ok {
			if err := w.d.Shutdown(nil); err != nil {
				return fmt.Sprintf("%s: Shutdown: %v", w.id, err)
			}
			return "drained"
		}
		ws := w.src.read()
		if len(ws) == 0 {
			continue
		}
		time.Sleep(readTime) // fake time: the rows take a while to process
		if err := w.d.Commit(ws); err != nil {
			_ = w.d.Shutdown(nil)
			return fmt.Sprintf("%s: Commit: %v", w.id, err)
		}
		w.turns++
		if abortAfter > 0 && w.turns >= abortAfter {
			// Deliver a few more rows that are never committed, then crash.
			w.src.read()
			w.heldAtAbort = len(w.src.lanes)
			w.coord.Abort()
			return "aborted"
		}
	}
}

// rig is what one end-to-end run shares: an engine, a memstore, the
// delivery count and the workers' debug log. Call newRig inside a synctest
// bubble.
type rig struct {
	e    *actor.Engine
	st   *memstore.Store
	out  *deliveries
	logs *syncBuffer
	log  *slog.Logger
}

func newRig(t *testing.T) *rig {
	t.Helper()
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	st := memstore.New(testkit.HarnessConfig().LeaseDuration)
	t.Cleanup(func() { _ = st.Close() })
	logs := &syncBuffer{}
	return &rig{e: e, st: st, out: &deliveries{count: map[int64]int{}}, logs: logs,
		log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
}

func (r *rig) start(t testing.TB, id string, job ledgerPlanner) *ledgerWorker {
	t.Helper()
	return startWorker(t, r.e, r.st, id, job, r.out, r.log)
}

// runLedger runs two workers over one memstore until both end: each must
// end Drained, except that abortSecond > 0 crashes the second worker after
// that many committing turns. The union of delivered rows must be exactly
// the ledger; duplicates are allowed (a forced move or a crash replays at
// most one commit interval) and reported.
func runLedger(t *testing.T, abortSecond int) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w1 := r.start(t, "w1", ledger)
		w2 := r.start(t, "w2", ledger)
		results := make([]string, 2)
		var wg sync.WaitGroup
		wg.Go(func() { results[0] = w1.run(0) })
		wg.Go(func() { results[1] = w2.run(abortSecond) })
		wg.Wait()

		want := []string{"drained", "drained"}
		if abortSecond > 0 {
			want[1] = "aborted"
		}
		if !slices.Equal(results, want) {
			t.Errorf("outcomes = %q, want %q", results, want)
		}
		if abortSecond > 0 && w2.heldAtAbort == 0 {
			t.Errorf("w2 held no split when it crashed; the survivor took nothing over")
		}
		dups := r.out.checkRows(t, int64(ledger.rows))
		t.Logf("%d duplicate deliveries; w1 turns %d, w2 turns %d, w2 lanes at crash %d",
			dups, w1.turns, w2.turns, w2.heldAtAbort)
		if t.Failed() {
			t.Logf("logs:\n%s", r.logs.String())
		}
		synctest.Wait()
	})
}

func TestEndToEndTwoWorkersDeliverTheLedgerExactly(t *testing.T) {
	runLedger(t, 0)
}

func TestEndToEndSurvivorFinishesAfterAWorkerAborts(t *testing.T) {
	runLedger(t, 3)
}

// Issue #12: a revocation requested right after a claim (the split
// completed at once, or the leader moved it as more workers joined) was
// begun for a tenancy already surrendered, never reached the driver
// ("revocation accepted" never logged) and was forced at exactly
// DrainDeadline. Four workers join one after another over a job of many
// small splits, so the leader moves splits just claimed; every revocation
// must settle before its deadline. Whether one run's moves reach a driver
// before their lanes finish depends on the interleaving (about 1 run in 100
// has none), so the test asks that the three runs together exercise
// revocations, not each of them.
func TestEndToEndRevocationsRightAfterClaimsAreNotForced(t *testing.T) {
	job := ledgerPlanner{rows: 300 * 20, splits: 300}
	total := 0
	for _, stagger := range []time.Duration{20 * time.Millisecond, 41 * time.Millisecond, 62 * time.Millisecond} {
		t.Run(stagger.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t)
				results := make([]string, 4)
				var wg sync.WaitGroup
				for k := range results {
					w := r.start(t, fmt.Sprintf("w%d", k+1), job)
					wg.Go(func() { results[k] = w.run(0) })
					time.Sleep(stagger)
				}
				wg.Wait()
				logs := r.logs.String()
				if want := []string{"drained", "drained", "drained", "drained"}; !slices.Equal(results, want) {
					t.Errorf("outcomes = %q, want %q", results, want)
				}
				r.out.checkRows(t, int64(job.rows))
				accepted := strings.Count(logs, "revocation accepted")
				total += accepted
				for _, line := range strings.Split(logs, "\n") {
					if strings.Contains(line, "drain deadline passed") || strings.Contains(line, "could not decline revocation") {
						t.Errorf("revocation forced at the deadline: %s", line)
					}
				}
				t.Logf("%d revocations accepted", accepted)
				synctest.Wait()
			})
		})
	}
	if total == 0 {
		t.Errorf("no revocation reached a driver in any run; the test does not exercise revocations")
	}
}
