package driver_test

import (
	"context"
	"fmt"
	"log/slog"
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

// The backpressure tests run one real coordinator under driver.Run on a
// memstore behind a testkit.FaultStore, inside a synctest bubble, with a
// source whose lanes read one row per tick on their own goroutines into an
// in-process sink: reading does not depend on the store, so only the driver
// can stop it while the store is out.
const (
	paceSplits = 4
	paceRows   = 1000                  // rows per split
	paceTick   = 10 * time.Millisecond // one row per lane per tick: 100 rows/s
	paceCommit = 100 * time.Millisecond
	paceOp     = 200 * time.Millisecond // the coordinator's OpTimeout
	paceLease  = 15 * time.Second       // a heartbeat (a third) outlives the outage: no split moves
	paceOutage = 3 * time.Second
)

// pacePlanner plans paceSplits splits of paceRows rows; the descriptor is the
// row count.
type pacePlanner struct{}

func (pacePlanner) Fingerprint() string { return "pace-v1" }
func (pacePlanner) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	plan := coordination.SplitPlan{Finality: coordination.PlanFinal}
	for i := range paceSplits {
		plan.Splits = append(plan.Splits, coordination.PlannedSplit{Spec: rowSpec(fmt.Sprintf("pace-%d", i), paceRows)})
	}
	return plan, nil
}

// paceLane is one lane of the paced source.
type paceLane struct {
	lane    driver.Lane
	rows    int64
	acked   int64         // one past the last row read; under the source's mu
	resumed chan struct{} // non-nil while paused; closed by ResumeLanes
	stop    chan struct{} // closed by StopLanes
	done    chan struct{} // closed when the reader has exited
}

// paceSource is a Source and Reader whose lanes read a row every paceTick
// into out; with pausable it is also a driver.Pauser. Safe for concurrent
// use.
type paceSource struct {
	driver.SourceDefaults
	out   *deliveries
	waker *coordination.Waker

	mu        sync.Mutex
	open      map[coordination.SplitID]*paceLane // by split, from OpenSplit to CloseSplit
	byLane    map[driver.LaneID]*paceLane        // every lane ever opened
	finishing []coordination.SplitID
	pauses    int // PauseLanes calls
	readers   sync.WaitGroup
}

// pausableSource is a paceSource that implements driver.Pauser.
type pausableSource struct{ *paceSource }

func newPaceSource() *paceSource {
	return &paceSource{
		out:    &deliveries{count: map[int64]int{}},
		open:   map[coordination.SplitID]*paceLane{},
		byLane: map[driver.LaneID]*paceLane{},
	}
}

func (s *paceSource) OpenSplit(o driver.Opening) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := &paceLane{lane: driver.Lane{ID: o.Lane, Partition: o.Partition, Split: o.Split}, rows: paceRows,
		stop: make(chan struct{}), done: make(chan struct{})}
	if o.Resume != nil {
		l.acked = o.Resume.Watermark
	}
	s.waker = o.Waker
	s.open[o.Split.ID] = l
	s.byLane[o.Lane] = l
	return nil
}

func (s *paceSource) EncodeCommit(split coordination.SplitID, w int64) (coordination.SplitProgress, error) {
	return coordination.SplitProgress{Watermark: w, Completed: w == paceRows}, nil
}

func (s *paceSource) Sweep(coordination.SplitID) (*coordination.SplitProgress, error) {
	return nil, nil
}

func (s *paceSource) CloseSplit(split coordination.SplitID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open, split)
}

func (s *paceSource) TakeFinishing() []coordination.SplitID {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.finishing
	s.finishing = nil
	return f
}

func (s *paceSource) StartLanes(lanes []driver.Lane) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, dl := range lanes {
		if l := s.byLane[dl.ID]; l != nil {
			s.readers.Go(func() { s.read(l) })
		}
	}
}

// read is a lane's reader: a row per tick, waiting while paused.
func (s *paceSource) read(l *paceLane) {
	defer close(l.done)
	tick := time.NewTicker(paceTick)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		resumed, row := l.resumed, l.acked
		s.mu.Unlock()
		if resumed != nil {
			select {
			case <-resumed:
				continue
			case <-l.stop:
				return
			}
		}
		s.out.add(int64(l.lane.Split.ID[len("pace-")]-'0')*paceRows + row)
		s.mu.Lock()
		l.acked = row + 1
		if l.acked == l.rows {
			s.finishing = append(s.finishing, l.lane.Split.ID)
		}
		s.mu.Unlock()
		if row+1 == l.rows {
			s.waker.Wake()
			return
		}
	}
}

func (s *paceSource) StopLanes(ids []driver.LaneID) {
	for _, id := range ids {
		s.mu.Lock()
		l := s.byLane[id]
		s.mu.Unlock()
		if l == nil {
			continue
		}
		select {
		case <-l.stop:
		default:
			close(l.stop)
		}
		<-l.done
	}
}

func (s *paceSource) Acked() []driver.Watermark {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ws []driver.Watermark
	for _, l := range s.open {
		ws = append(ws, driver.Watermark{Partition: l.lane.Partition, Value: l.acked})
	}
	return ws
}

// acked returns the rows read of every open lane, by split.
func (s *paceSource) acked() map[coordination.SplitID]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[coordination.SplitID]int64{}
	for id, l := range s.open {
		out[id] = l.acked
	}
	return out
}

func (s pausableSource) PauseLanes(ids []driver.LaneID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pauses++
	for _, id := range ids {
		if l := s.byLane[id]; l != nil && l.resumed == nil {
			l.resumed = make(chan struct{})
		}
	}
}

func (s pausableSource) ResumeLanes(ids []driver.LaneID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if l := s.byLane[id]; l != nil && l.resumed != nil {
			close(l.resumed)
			l.resumed = nil
		}
	}
}

// landingCoordinator records, per split, the watermark of the last commit
// that landed (returned nil).
type landingCoordinator struct {
	// Embedded whole, so its Logger and InstanceID reach the driver.
	*actors.Coordinator

	mu     sync.Mutex
	landed map[coordination.SplitID]int64
}

func (c *landingCoordinator) Commit(id coordination.SplitID, p coordination.SplitProgress) error {
	err := c.Coordinator.Commit(id, p)
	if err == nil {
		c.mu.Lock()
		c.landed[id] = max(c.landed[id], p.Watermark)
		c.mu.Unlock()
	}
	return err
}

func (c *landingCoordinator) snapshot() map[coordination.SplitID]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[coordination.SplitID]int64{}
	for k, v := range c.landed {
		out[k] = v
	}
	return out
}

// outageRun is what runOutage observed.
type outageRun struct {
	tail    int64  // the most rows any lane had read beyond its last landed commit when the store came back
	pauses  int    // PauseLanes calls
	logs    string // the run's log
	outcome error  // Run's result
}

// runOutage runs one worker over the paced source (pausable or not) and
// cuts it off the store with outage for paceOutage once every lane reads,
// then lets it finish. It fails the test unless every row was delivered and
// every split's completed commit landed.
func runOutage(t *testing.T, pausable bool, outage func(*testkit.FaultStore) (restore func()), opts ...driver.Option) outageRun {
	var res outageRun
	synctest.Test(t, func(t *testing.T) {
		e, err := actor.NewEngine(actor.NewEngineConfig())
		if err != nil {
			t.Fatal(err)
		}
		st := memstore.New(paceLease)
		defer st.Close()
		fs := testkit.NewFaultStore(st)
		cfg := testkit.HarnessConfig()
		cfg.InstanceID = "w1"
		cfg.LeaseDuration, cfg.OpTimeout, cfg.ReplanInterval, cfg.DrainDeadline = paceLease, paceOp, paceLease, paceLease/2
		var logBuf syncBuffer
		log := slog.New(slog.NewTextHandler(&logBuf, nil))
		cfg.Logger = log
		coord, err := actors.Spawn(e, fs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		c := &landingCoordinator{Coordinator: coord, landed: map[coordination.SplitID]int64{}}
		src := newPaceSource()
		var reader driver.SourceReader = src
		if pausable {
			reader = pausableSource{src}
		}
		done := make(chan error, 1)
		go func() {
			// No WithLogger: Run logs to the coordinator's logger.
			done <- driver.Run(t.Context(), c, reader, append([]driver.Option{driver.WithPlanner(pacePlanner{}),
				driver.WithCommitInterval(paceCommit)}, opts...)...)
		}()
		time.Sleep(cfg.StartupGrace + 2*time.Second) // fake time: past the startup hold, every lane is reading by now
		synctest.Wait()
		if n := len(src.acked()); n != paceSplits {
			t.Fatalf("%d lanes open before the outage, want %d", n, paceSplits)
		}
		restore := outage(fs)
		time.Sleep(paceOutage)
		synctest.Wait()
		landed := c.snapshot()
		for id, read := range src.acked() {
			res.tail = max(res.tail, read-landed[id])
		}
		restore()
		res.outcome = <-done
		src.readers.Wait()
		src.mu.Lock()
		res.pauses = src.pauses
		src.mu.Unlock()
		if dups := src.out.checkRows(t, paceSplits*paceRows); dups != 0 {
			t.Errorf("%d duplicate deliveries, want 0: no split moved\n%s", dups, logBuf.String())
		}
		landed = c.snapshot()
		for i := range paceSplits {
			if id := coordination.SplitID(fmt.Sprintf("pace-%d", i)); landed[id] != paceRows {
				t.Errorf("split %s: last landed commit at %d, want %d", id, landed[id], paceRows)
			}
		}
		res.logs = logBuf.String()
		synctest.Wait()
	})
	return res
}

// hang makes every store operation time out until restored.
func hang(fs *testkit.FaultStore) func() { fs.Hang(); return fs.Unhang }

// partition makes every store operation fail at once until restored.
func partition(fs *testkit.FaultStore) func() { fs.Partition(); return fs.Heal }

// A lane reads 100 rows/s. Pausing one commit interval (the default window)
// after the first commit that did not land bounds the uncommitted tail to
// what a lane reads in the last landed commit's interval, the window and one
// OpTimeout: 0.1 + 0.1 + 0.2 s, 40 rows; 50 allows two ticks and a round of
// slack. Without the pause a lane reads through the whole 3 s outage.
const paceBound = 50

func TestRunPausesIntakeWhileCommitsDoNotLand(t *testing.T) {
	tests := []struct {
		name   string
		outage func(*testkit.FaultStore) func()
	}{
		{"store hung: commits time out", hang},
		{"store partitioned: commits fail at once", partition},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runOutage(t, true, tt.outage)
			if res.outcome != nil {
				t.Fatalf("Run = %v, want nil (AllComplete)\n%s", res.outcome, res.logs)
			}
			if res.tail > paceBound {
				t.Errorf("a lane read %d rows beyond its last landed commit during the outage, want at most %d", res.tail, paceBound)
			}
			if res.pauses == 0 || !strings.Contains(res.logs, "intake paused") || !strings.Contains(res.logs, "intake resumed") {
				t.Errorf("PauseLanes calls %d; want intake paused and resumed in the log:\n%s", res.pauses, res.logs)
			}
			// The driver's records reach the coordinator's logger (Run was
			// given none) and name the worker.
			for line := range strings.Lines(res.logs) {
				if strings.Contains(line, "intake paused") && !strings.Contains(line, " instance=w1") {
					t.Errorf("the driver's warning does not name the worker: %s", line)
				}
			}
			t.Logf("uncommitted tail at the end of the outage: %d rows (bound %d); %d PauseLanes calls", res.tail, paceBound, res.pauses)
		})
	}
}

func TestRunWithoutPauserReadsThroughTheOutageAndWarnsOnce(t *testing.T) {
	res := runOutage(t, false, hang)
	if res.outcome != nil {
		t.Fatalf("Run = %v, want nil (AllComplete)\n%s", res.outcome, res.logs)
	}
	if want := int64(paceOutage / paceTick / 2); res.tail < want {
		t.Errorf("uncommitted tail %d rows; a source that cannot pause should read through the outage (at least %d)", res.tail, want)
	}
	if n := strings.Count(res.logs, "implement driver.Pauser"); n != 1 {
		t.Errorf("the cannot-pause warning was logged %d times, want once:\n%s", n, res.logs)
	}
}

func TestRunPauseWindowIsConfigurable(t *testing.T) {
	// A window longer than the outage never pauses: the tail is the whole
	// outage's reading, as without a Pauser.
	res := runOutage(t, true, hang, driver.WithPauseAfter(2*paceOutage))
	if res.outcome != nil {
		t.Fatalf("Run = %v, want nil (AllComplete)", res.outcome)
	}
	if res.pauses != 0 || res.tail <= paceBound {
		t.Errorf("with a window beyond the outage: %d PauseLanes calls and a tail of %d rows; want none and more than %d", res.pauses, res.tail, paceBound)
	}
}
