package actors

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// testPlanner is a Planner returning a fixed plan.
type testPlanner struct {
	fp    string
	plan  coordination.SplitPlan
	err   error
	panic any
}

func (p *testPlanner) Fingerprint() string { return p.fp }

func (p *testPlanner) Plan(ctx context.Context, pc coordination.PlanContext) (coordination.SplitPlan, error) {
	if p.panic != nil {
		panic(p.panic)
	}
	return p.plan, p.err
}

func finalPlan(ids ...string) *testPlanner {
	p := &testPlanner{fp: "job:v1", plan: coordination.SplitPlan{Finality: coordination.PlanFinal}}
	for _, id := range ids {
		p.plan.Splits = append(p.plan.Splits, coordination.PlannedSplit{Spec: coordination.SplitSpec{ID: coordination.SplitID(id), Weight: 1}})
	}
	return p
}

// testConfig is the fleet harness's configuration (§30.2).
func testConfig(tb testing.TB, clk clock.Clock, id string) coordination.Config {
	tb.Helper()
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = id
	cfg.LeaseDuration = 1500 * time.Millisecond
	cfg.OpTimeout = 200 * time.Millisecond
	cfg.ReplanInterval = cfg.LeaseDuration
	cfg.ReconcileInterval = 400 * time.Millisecond
	cfg.DrainDeadline = cfg.LeaseDuration / 2
	cfg.RebalanceDelay = 0
	cfg.Clock = clk
	cfg.Logger = slog.New(slog.NewTextHandler(tb.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	return cfg
}

// rig is one engine, one memstore and one mock clock inside a bubble.
type rig struct {
	tb  testing.TB
	e   *actor.Engine
	st  *memstore.Store
	clk *clock.Mock
}

func newRig(tb testing.TB) *rig {
	tb.Helper()
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		tb.Fatal(err)
	}
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return &rig{tb: tb, e: e, st: memstore.New(1500*time.Millisecond, memstore.WithClock(clk)), clk: clk}
}

// advance moves the mock clock by d in steps of at most lease/12, letting
// every goroutine of the bubble settle between steps.
func (r *rig) advance(d time.Duration) {
	step := 125 * time.Millisecond
	for d > 0 {
		s := min(step, d)
		r.clk.Add(s)
		settle()
		// Yield bubble (real) time so that real-time backoffs and I/O
		// bounds make progress between clock steps.
		time.Sleep(20 * time.Millisecond)
		settle()
		d -= s
	}
}

// settle waits until every goroutine of the bubble is durably blocked.
func settle() { synctest.Wait() }

// collect polls c, appending events to *evs, and fails on an error.
func collect(tb testing.TB, c *Coordinator, evs *[]coordination.Event) {
	tb.Helper()
	got, err := c.Poll()
	if err != nil {
		tb.Fatalf("Poll: %v", err)
	}
	*evs = append(*evs, got...)
}

type (
	storeKeyspace = store.Keyspace
	storeEntry    = store.Entry
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// faultyStore lets a test decide the fate of the next durable update of one
// key: apply it and report Retryable anyway (maybe-landed), or fail the
// read that follows a lost CAS.
type faultyStore struct {
	*memstore.Store
	mu          sync.Mutex
	landThenErr string // key: the next durable Update lands, then reports Retryable
	failGet     string // key: the next durable Get fails
}

// startOn starts worker id on st with the test configuration, changed by
// mut.
func (r *rig) startOn(st store.Store, id string, p coordination.Planner, mut ...func(*coordination.Config)) *member {
	r.tb.Helper()
	cfg := testConfig(r.tb, r.clk, id)
	for _, f := range mut {
		f(&cfg)
	}
	c, err := Spawn(r.e, st, cfg)
	if err != nil {
		r.tb.Fatal(err)
	}
	r.tb.Cleanup(c.Abort)
	if err := c.Start(p); err != nil {
		r.tb.Fatal(err)
	}
	return &member{c: c, held: map[coordination.SplitID]coordination.Gained{}}
}

// casEnv is a minimal env for driving the write functions directly.
func casEnv(tb testing.TB, st store.Store) *worker.Env {
	tb.Helper()
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "me"
	v := &worker.Env{Config: cfg, Clock: clock.NewMock(), ID: "me", Nonce: "n", Log: discardLogger(), Outbox: &worker.Outbox{}}
	v.Session.Store(&v.Nonce)
	v.Store = &worker.GuardedStore{Store: st, Halted: &v.Halted}
	v.FPHash.Store(protocol.Fingerprint("job:v1"))
	return v
}

// put writes value at key (create when rev is 0, else update at rev) and
// returns the new revision.
func put(tb testing.TB, st store.Store, key string, value []byte, rev uint64) uint64 {
	tb.Helper()
	var r store.Revision
	var ok bool
	var err error
	if rev == 0 {
		r, ok, err = st.Create(context.Background(), store.Durable, key, value)
	} else {
		r, ok, err = st.Update(context.Background(), store.Durable, key, value, store.Revision(rev))
	}
	if err != nil || !ok {
		tb.Fatalf("put %s: %v %v", key, ok, err)
	}
	return uint64(r)
}

// logCapture records every log record's level and message.
type logCapture struct {
	mu   *sync.Mutex
	recs *[]string
	next slog.Handler
}

// withAttrs keeps attributes added by Logger.With visible to Handle.
type withAttrs struct {
	logCapture
	attrs []slog.Attr
}

func ptr[T any](v T) *T { return &v }

// start starts worker id on the rig's store; see startOn.
func (r *rig) start(id string, p coordination.Planner, mut ...func(*coordination.Config)) *member {
	r.tb.Helper()
	return r.startOn(r.st, id, p, mut...)
}

// pump polls m and folds its events.
func (m *member) pump(tb testing.TB) {
	tb.Helper()
	got, err := m.c.Poll()
	if err != nil {
		tb.Fatalf("%s: Poll: %v", m.c.InstanceID(), err)
	}
	for _, ev := range got {
		switch e := ev.(type) {
		case coordination.Gained:
			m.held[e.Split.ID] = e
		case coordination.Lost:
			delete(m.held, e.Split)
		}
	}
	m.evs = append(m.evs, got...)
}

// until advances the clock until cond holds, pumping every member.
func (r *rig) until(what string, limit time.Duration, ms []*member, cond func() bool) {
	r.tb.Helper()
	for waited := time.Duration(0); ; waited += 125 * time.Millisecond {
		for _, m := range ms {
			m.pump(r.tb)
		}
		if cond() {
			return
		}
		if waited > limit {
			var s string
			for _, m := range ms {
				s += fmt.Sprintf("\n%s: %v", m.c.InstanceID(), m.evs)
			}
			r.tb.Fatalf("timed out waiting for %s:%s", what, s)
		}
		r.advance(125 * time.Millisecond)
	}
}

func verdictOf(m *member) coordination.Event {
	if len(m.evs) == 0 {
		return nil
	}
	switch e := m.evs[len(m.evs)-1].(type) {
	case coordination.AllComplete, coordination.Stalled:
		return e
	}
	return nil
}

func hasEvent[E coordination.Event](m *member) (E, bool) {
	for _, ev := range m.evs {
		if e, ok := ev.(E); ok {
			return e, true
		}
	}
	var zero E
	return zero, false
}

func (s *faultyStore) Update(ctx context.Context, ks store.Keyspace, key string, v []byte, rev store.Revision) (store.Revision, bool, error) {
	s.mu.Lock()
	hit := ks == store.Durable && key == s.landThenErr
	if hit {
		s.landThenErr = ""
	}
	s.mu.Unlock()
	r, ok, err := s.Store.Update(ctx, ks, key, v, rev)
	if hit && ok && err == nil {
		return 0, false, coordination.Errorf(coordination.Retryable, "injected: reply lost after the write landed")
	}
	return r, ok, err
}

func (s *faultyStore) Get(ctx context.Context, ks store.Keyspace, key string) (store.Entry, bool, error) {
	s.mu.Lock()
	hit := ks == store.Durable && key == s.failGet
	if hit {
		s.failGet = ""
	}
	s.mu.Unlock()
	if hit {
		return store.Entry{}, false, coordination.Errorf(coordination.Retryable, "injected: read failed")
	}
	return s.Store.Get(ctx, ks, key)
}

func (h logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (h logCapture) Handle(ctx context.Context, r slog.Record) error {
	worker := ""
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "instance" {
			worker = a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	*h.recs = append(*h.recs, r.Level.String()+" "+r.Message+" instance="+worker)
	h.mu.Unlock()
	return h.next.Handle(ctx, r)
}

func (h logCapture) WithAttrs(as []slog.Attr) slog.Handler {
	h.next = h.next.WithAttrs(as)
	return withAttrs{logCapture: h, attrs: as}
}

func (h logCapture) WithGroup(name string) slog.Handler { return h }

func (h withAttrs) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(h.attrs...)
	return h.logCapture.Handle(ctx, r)
}

func (h withAttrs) WithAttrs(as []slog.Attr) slog.Handler {
	return withAttrs{logCapture: h.logCapture, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

// member is one worker of a small in-package fleet with its event log.
type member struct {
	c    *Coordinator
	evs  []coordination.Event
	held map[coordination.SplitID]coordination.Gained
}
