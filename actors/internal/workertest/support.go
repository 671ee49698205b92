package workertest

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// Planner is a Planner returning a fixed plan.
type Planner struct {
	FP     string
	Result coordination.SplitPlan
	Err    error
	Panic  any
}

func (p *Planner) Fingerprint() string { return p.FP }

func (p *Planner) Plan(ctx context.Context, pc coordination.PlanContext) (coordination.SplitPlan, error) {
	if p.Panic != nil {
		panic(p.Panic)
	}
	return p.Result, p.Err
}

// FinalPlan is a planner of a final plan of one split per id, weight 1.
func FinalPlan(ids ...string) *Planner {
	p := &Planner{FP: "job:v1", Result: coordination.SplitPlan{Finality: coordination.PlanFinal}}
	for _, id := range ids {
		p.Result.Splits = append(p.Result.Splits, coordination.PlannedSplit{Spec: coordination.SplitSpec{ID: coordination.SplitID(id), Weight: 1}})
	}
	return p
}

// Config is the test configuration of worker id on clock clk.
func Config(tb testing.TB, clk clock.Clock, id string) coordination.Config {
	tb.Helper()
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = id
	cfg.LeaseDuration = 1500 * time.Millisecond
	cfg.OpTimeout = 200 * time.Millisecond
	cfg.ReplanInterval = cfg.LeaseDuration
	cfg.ReconcileInterval = 400 * time.Millisecond
	cfg.DrainDeadline = cfg.LeaseDuration / 2
	cfg.RebalanceDelay = 0
	cfg.MinCutWeight = 1 // the tests' splits weigh a few units
	cfg.Clock = clk
	cfg.Logger = slog.New(slog.NewTextHandler(tb.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	return cfg
}

// DiscardLogger is a logger that drops every record.
func DiscardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// FaultyStore lets a test decide the fate of the next durable update of one
// key: apply it and report Retryable anyway (maybe-landed), or fail the
// read that follows a lost CAS.
type FaultyStore struct {
	*memstore.Store
	Mu          sync.Mutex
	LandThenErr string // key: the next durable Update lands, then reports Retryable
	FailGet     string // key: the next durable Get fails
	FailCreate  string // key: the next durable Create fails without writing
}

// FP is H("job:v1"), the fingerprint of the tests' jobs (FinalPlan), which
// the records a test writes carry.
var FP = protocol.Fingerprint("job:v1")

// NewEnv is a minimal environment for driving the write functions directly.
func NewEnv(tb testing.TB, st store.Store) *worker.Env {
	tb.Helper()
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "me"
	latch := worker.NewLatch()
	return &worker.Env{Raw: st, Store: &worker.GuardedStore{Store: st, Latch: latch}, Config: cfg, Clock: clock.NewMock(), ID: "me", Nonce: "n", Log: DiscardLogger(), Latch: latch, Backlog: &worker.Backlog{}, WG: &sync.WaitGroup{}}
}

// ActorEnv is the environment of worker cfg.InstanceID in session nonce on
// engine e over st, with metrics on reg (nil: none): what a test needs to
// run one actor alone. The caller ends its context (Cancel) at cleanup,
// before it waits for the worker's goroutines (WG).
func ActorEnv(e *actor.Engine, st store.Store, cfg coordination.Config, nonce string, reg prometheus.Registerer) *worker.Env {
	id := cfg.InstanceID
	latch := worker.NewLatch()
	metrics := worker.NewMetrics(reg, id, DiscardLogger())
	ctx, cancel := context.WithCancel(context.Background())
	return &worker.Env{
		Engine: e, Raw: st, Store: &worker.GuardedStore{Store: st, Latch: latch, Metrics: metrics},
		Config: cfg, Clock: cfg.Clock, ID: id, Nonce: nonce, Log: cfg.Logger, Metrics: metrics,
		Latch: latch, Backlog: &worker.Backlog{}, Ctx: ctx, Cancel: cancel, WG: &sync.WaitGroup{},
	}
}

// Put writes value at key (create when rev is 0, else update at rev) and
// returns the new revision.
func Put(tb testing.TB, st store.Store, key string, value []byte, rev uint64) uint64 {
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

// LogCapture records every log record's level and message.
type LogCapture struct {
	Mu   *sync.Mutex
	Recs *[]string
	Next slog.Handler
}

// withAttrs keeps attributes added by Logger.With visible to Handle.
type withAttrs struct {
	LogCapture
	attrs []slog.Attr
}

// Ptr returns a pointer to a copy of v.
func Ptr[T any](v T) *T { return &v }

func (s *FaultyStore) Update(ctx context.Context, ks store.Keyspace, key string, v []byte, rev store.Revision) (store.Revision, bool, error) {
	s.Mu.Lock()
	hit := ks == store.Durable && key == s.LandThenErr
	if hit {
		s.LandThenErr = ""
	}
	s.Mu.Unlock()
	r, ok, err := s.Store.Update(ctx, ks, key, v, rev)
	if hit && ok && err == nil {
		return 0, false, coordination.Errorf(coordination.Retryable, "injected: reply lost after the write landed")
	}
	return r, ok, err
}

func (s *FaultyStore) Create(ctx context.Context, ks store.Keyspace, key string, v []byte) (store.Revision, bool, error) {
	s.Mu.Lock()
	hit := ks == store.Durable && key == s.FailCreate
	if hit {
		s.FailCreate = ""
	}
	s.Mu.Unlock()
	if hit {
		return 0, false, coordination.Errorf(coordination.Retryable, "injected: create failed")
	}
	return s.Store.Create(ctx, ks, key, v)
}

func (s *FaultyStore) Get(ctx context.Context, ks store.Keyspace, key string) (store.Entry, bool, error) {
	s.Mu.Lock()
	hit := ks == store.Durable && key == s.FailGet
	if hit {
		s.FailGet = ""
	}
	s.Mu.Unlock()
	if hit {
		return store.Entry{}, false, coordination.Errorf(coordination.Retryable, "injected: read failed")
	}
	return s.Store.Get(ctx, ks, key)
}

func (h LogCapture) Enabled(context.Context, slog.Level) bool { return true }

func (h LogCapture) Handle(ctx context.Context, r slog.Record) error {
	worker := ""
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "instance" {
			worker = a.Value.String()
		}
		return true
	})
	h.Mu.Lock()
	*h.Recs = append(*h.Recs, r.Level.String()+" "+r.Message+" instance="+worker)
	h.Mu.Unlock()
	return h.Next.Handle(ctx, r)
}

func (h LogCapture) WithAttrs(as []slog.Attr) slog.Handler {
	h.Next = h.Next.WithAttrs(as)
	return withAttrs{LogCapture: h, attrs: as}
}

func (h LogCapture) WithGroup(name string) slog.Handler { return h }

func (h withAttrs) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(h.attrs...)
	return h.LogCapture.Handle(ctx, r)
}

func (h withAttrs) WithAttrs(as []slog.Attr) slog.Handler {
	return withAttrs{LogCapture: h.LogCapture, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

// GaugeOf returns the gauge name of one worker.
func GaugeOf(tb testing.TB, reg *prometheus.Registry, name, worker string) float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "worker" && lp.GetValue() == worker {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	tb.Fatalf("no %s{worker=%s}", name, worker)
	return 0
}

// CounterSum sums one counter family's series carrying the label value
// across workers.
func CounterSum(tb testing.TB, reg *prometheus.Registry, name, value string) float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetValue() == value {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// Recorder is an actor that keeps every message it receives.
type Recorder struct {
	Mu   *sync.Mutex
	Msgs *[]any
}

func (r Recorder) Receive(c *actor.Context) {
	switch c.Message().(type) {
	case actor.Initialized, actor.Started, actor.Stopped:
		return
	}
	r.Mu.Lock()
	*r.Msgs = append(*r.Msgs, c.Message())
	r.Mu.Unlock()
}

// NewEngine returns a hollywood engine and a mock clock set to a fixed
// time, for a test that runs actors in a synctest bubble.
func NewEngine(tb testing.TB) (*actor.Engine, *clock.Mock) {
	tb.Helper()
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		tb.Fatal(err)
	}
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return e, clk
}
