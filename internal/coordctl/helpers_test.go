package coordctl

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/internal/embednats"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/natsstore"
	"github.com/spate-go/coordination/store/pgstore"
)

// testLease is the workers' LeaseDuration (the natsstore minimum).
const testLease = 2 * time.Second

// pg is the package's shared PostgreSQL server; nil when no server
// binaries exist (the PostgreSQL variants then skip).
var pg *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pg)) }

// backend is a store a test job runs on, as workers and coordctl reach it.
type backend struct {
	name string
	// conn are coordctl's connection flags of the job but -job.
	conn []string
	// open opens the job's store as a worker does; closed at cleanup.
	open func(t testing.TB, job string) store.Store
}

// natsBackend runs an embedded JetStream server (127.0.0.1, random port,
// store in a temporary directory) until cleanup; coordctl reaches it with
// the classic flag -nats and reads the lease TTL from the job.
func natsBackend(t testing.TB) backend {
	t.Helper()
	url := startNATS(t)
	return backend{name: "nats", conn: []string{"-nats", url}, open: func(t testing.TB, job string) store.Store {
		st, err := natsstore.New(natsstore.Config{Servers: []string{url}, Job: job, History: 64}, testLease)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}}
}

// pgBackend is a database of its own on the shared PostgreSQL server;
// coordctl reaches it with -store postgres://... and reads the lease TTL
// from the job.
func pgBackend(t testing.TB) backend {
	t.Helper()
	s := pgtest.Need(t, pg)
	db := pgtest.UniqueName("ctl")
	if err := s.CreateDatabase(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	dsn := s.DSN(db)
	return backend{name: "postgres", conn: []string{"-store", dsn}, open: func(t testing.TB, job string) store.Store {
		st, err := pgstore.New(pgstore.Config{DSN: dsn, Job: job}, testLease)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}}
}

// backends returns both backends, each as a subtest's setup.
func backends() map[string]func(testing.TB) backend {
	return map[string]func(testing.TB) backend{"nats": natsBackend, "postgres": pgBackend}
}

// startNATS runs an embedded JetStream server (127.0.0.1, random port,
// store in a temporary directory) until cleanup and returns its URL.
func startNATS(t testing.TB) string {
	t.Helper()
	srv, err := embednats.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { embednats.Stop(srv) })
	return srv.ClientURL()
}

// rangePlanner plans splits "s-<i>" of weight 10·(i+1); their descriptor is
// the range's end (8 bytes). Splits named in poison get a seed at 0, so
// their first claim carries progress for ValidateResume to reject.
type rangePlanner struct {
	splits int
	poison map[coordination.SplitID]bool
}

func (p rangePlanner) Fingerprint() string { return fmt.Sprintf("coordctl-test:v1:%d", p.splits) }

func (p rangePlanner) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	plan := coordination.SplitPlan{Finality: coordination.PlanFinal}
	for i := range p.splits {
		hi := uint64(10 * (i + 1))
		ps := coordination.PlannedSplit{Spec: coordination.SplitSpec{
			ID:         splitName(i),
			Descriptor: binary.BigEndian.AppendUint64(nil, hi),
			Weight:     hi,
		}}
		if p.poison[ps.Spec.ID] {
			ps.Seed = &coordination.SplitProgress{Watermark: 0}
		}
		plan.Splits = append(plan.Splits, ps)
	}
	return plan, nil
}

// splitName is the id of split i.
func splitName(i int) coordination.SplitID { return coordination.SplitID(fmt.Sprintf("s-%d", i)) }

// gateSource delivers a lane's whole range at once when its gate is open
// (nil or closed): a lane started while the gate is shut waits for it.
// Splits in poison are rejected by ValidateResume (the driver fails them).
type gateSource struct {
	driver.SourceDefaults
	gate   <-chan struct{}
	poison map[coordination.SplitID]bool

	mu        sync.Mutex
	lanes     map[driver.LaneID]*gateLane
	finishing []coordination.SplitID
	wg        sync.WaitGroup
}

type gateLane struct {
	split        coordination.SplitID
	partition    driver.PartitionID
	hi, acked    int64
	waker        *coordination.Waker
	stop, done   chan struct{}
	started, eof bool
}

func newGateSource(gate <-chan struct{}, poison map[coordination.SplitID]bool) *gateSource {
	if gate == nil {
		open := make(chan struct{})
		close(open)
		gate = open
	}
	return &gateSource{gate: gate, poison: poison, lanes: map[driver.LaneID]*gateLane{}}
}

func (s *gateSource) ValidateResume(spec coordination.SplitSpec, _ coordination.SplitProgress) error {
	if s.poison[spec.ID] {
		// Retryable: driver.Run logs a rejection of that kind and goes on;
		// the driver has failed the split already.
		return coordination.Errorf(coordination.Retryable, "split %s is poison in this run", spec.ID)
	}
	return nil
}

func (s *gateSource) OpenSplit(o driver.Opening) error {
	if len(o.Split.Descriptor) != 8 {
		return fmt.Errorf("split %s: descriptor is %d bytes, want 8", o.Split.ID, len(o.Split.Descriptor))
	}
	l := &gateLane{split: o.Split.ID, partition: o.Partition, hi: int64(binary.BigEndian.Uint64(o.Split.Descriptor)), waker: o.Waker,
		stop: make(chan struct{}), done: make(chan struct{})}
	if o.Resume != nil {
		l.acked = o.Resume.Watermark
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lanes[o.Lane] = l
	return nil
}

func (s *gateSource) EncodeCommit(split coordination.SplitID, watermark int64) (coordination.SplitProgress, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.lanes {
		if l.split == split {
			return coordination.SplitProgress{Watermark: watermark, Completed: watermark == l.hi}, nil
		}
	}
	return coordination.SplitProgress{Watermark: watermark}, nil
}

func (s *gateSource) Sweep(coordination.SplitID) (*coordination.SplitProgress, error) {
	return nil, nil
}

func (s *gateSource) CloseSplit(split coordination.SplitID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, l := range s.lanes {
		if l.split == split && !l.started {
			delete(s.lanes, id)
		}
	}
}

func (s *gateSource) TakeFinishing() []coordination.SplitID {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.finishing
	s.finishing = nil
	return f
}

func (s *gateSource) StartLanes(lanes []driver.Lane) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ln := range lanes {
		l := s.lanes[ln.ID]
		if l == nil || l.started {
			continue
		}
		l.started = true
		s.wg.Go(func() {
			defer close(l.done)
			select {
			case <-s.gate:
			case <-l.stop:
				return
			}
			s.mu.Lock()
			l.acked, l.eof = l.hi, true
			s.finishing = append(s.finishing, l.split)
			s.mu.Unlock()
			l.waker.Wake()
		})
	}
}

func (s *gateSource) StopLanes(ids []driver.LaneID) {
	for _, id := range ids {
		s.mu.Lock()
		l := s.lanes[id]
		delete(s.lanes, id)
		s.mu.Unlock()
		if l != nil && l.started {
			close(l.stop)
			<-l.done
		}
	}
}

func (s *gateSource) Acked() []driver.Watermark {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ws []driver.Watermark
	for _, l := range s.lanes {
		ws = append(ws, driver.Watermark{Partition: l.partition, Value: l.acked})
	}
	return ws
}

// fleet runs workers of one job on the embedded server, each with its own
// engine, store and coordinator, under driver.Run.
type fleet struct {
	t    testing.TB
	be   backend
	job  string
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs map[string]error
}

// newFleet returns an empty fleet; cleanup waits for its workers (their
// context, the test's, ends first), so none outlives the test.
func newFleet(t testing.TB, be backend, job string) *fleet {
	f := &fleet{t: t, be: be, job: job, errs: map[string]error{}}
	t.Cleanup(f.wg.Wait)
	return f
}

// workerConfig is the coordinator configuration of a test worker.
func workerConfig(t testing.TB, name string, maxAttempts uint32) coordination.Config {
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = name
	cfg.LeaseDuration = testLease
	cfg.OpTimeout = 500 * time.Millisecond
	cfg.ReplanInterval = testLease
	cfg.ReconcileInterval = time.Second
	cfg.DrainDeadline = time.Second
	cfg.RebalanceDelay = 0
	cfg.StartupGrace = 0
	cfg.MaxAttempts = maxAttempts
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	return cfg
}

// start runs worker name until its job ends or ctx does.
func (f *fleet) start(ctx context.Context, name string, p coordination.Planner, src *gateSource, maxAttempts uint32) {
	f.t.Helper()
	st := f.be.open(f.t, f.job)
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		f.t.Fatal(err)
	}
	c, err := actors.Spawn(e, st, workerConfig(f.t, name, maxAttempts))
	if err != nil {
		f.t.Fatal(err)
	}
	f.wg.Go(func() {
		err := driver.Run(ctx, c, src, driver.WithPlanner(p), driver.WithCommitInterval(100*time.Millisecond))
		src.wg.Wait()
		f.t.Logf("worker %s ended: %v", name, err)
		f.mu.Lock()
		f.errs[name] = err
		f.mu.Unlock()
	})
}

// wait waits for every worker and returns their outcomes.
func (f *fleet) wait() map[string]error {
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.errs
}

// ctl runs coordctl with the connection flags of the job and returns its
// exit status, standard output and standard error.
func ctl(t testing.TB, ctx context.Context, be backend, job string, args ...string) (int, string, string) {
	t.Helper()
	full := append(append([]string{args[0], "-job", job, "-timeout", "10s"}, be.conn...), args[1:]...)
	var out, errb bytes.Buffer
	code := Run(ctx, full, &out, &errb)
	return code, out.String(), errb.String()
}

// eventually polls cond every 50ms until it holds, failing after timeout.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
