package testkit

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// Fleet runs several real coordinators (actors.Spawn) on one memstore that
// shares a *clock.Mock with all of them. Each member reaches the
// store through its own [FaultStore]. A [Recorder] and a [Checker] watch
// every progress-record write and every polled event and check the
// invariants ([Checker]) after every step; a violation fails the test.
//
// A Fleet is meant to run inside a testing/synctest bubble: create it inside
// the bubble (or use [RunFleet], which does both), drive it only from the
// bubble's main goroutine, and let it stop everything in the test's cleanup
// before the bubble returns. Inside the bubble, "yielding real time" is
// time.Sleep (fake time) followed by synctest.Wait, so every step runs until
// every actor is idle: no sleeps on the wall clock, no flakes. Using a Fleet
// outside a bubble is not supported: synctest.Wait panics there.
//
// A Fleet is not safe for concurrent use.
type Fleet struct {
	t       testing.TB
	opts    fleetOptions
	cfg     coordination.Config
	clock   *clock.Mock
	store   *memstore.Store
	engine  *actor.Engine
	checker *Checker
	rec     *Recorder
	ctx     context.Context
	cancel  context.CancelFunc

	members  map[string]*Member
	skewed   map[string]*skewedClock // members' own clocks (WithClockRate)
	order    []string                // member ids in first-start order
	reported int                     // violations already reported
	steps    int                     // clock steps taken by Advance
	armNext  func(*FaultStore)
	closed   bool
}

type fleetOptions struct {
	cfgMutators []func(*coordination.Config)
	untilBudget time.Duration
	logger      *slog.Logger
	onFail      func(msg string) // nil: t.Fatal
	failureLogs bool
	clockRates  map[string]float64 // member name → rate of its own clock
}

// Option configures a [Fleet].
type Option func(*fleetOptions)

// WithConfig applies mutate to every member's configuration after the
// harness defaults and before the member's own mutators.
func WithConfig(mutate func(*coordination.Config)) Option {
	return func(o *fleetOptions) { o.cfgMutators = append(o.cfgMutators, mutate) }
}

// WithClockRate gives member (by fleet name, every incarnation) a clock of
// its own that runs at rate times the fleet's clock: 1.05 runs 5% fast, 0.95
// 5% slow. The store keeps the fleet's clock, so the member's timers
// (heartbeats, its own lease judgement, deadlines) drift against the
// store's expiry, as on a machine whose clock is skewed. rate must be
// positive.
func WithClockRate(member string, rate float64) Option {
	return func(o *fleetOptions) {
		if o.clockRates == nil {
			o.clockRates = map[string]float64{}
		}
		o.clockRates[member] = rate
	}
}

// skewedClock is a member's own clock, advanced with the fleet's at a rate.
type skewedClock struct {
	mock  *clock.Mock
	rate  float64
	carry float64 // nanoseconds owed below one
}

// add advances the clock by rate times d.
func (c *skewedClock) add(d time.Duration) {
	ns := float64(d)*c.rate + c.carry
	whole := time.Duration(ns)
	c.carry = ns - float64(whole)
	c.mock.Add(whole)
}

// WithUntilBudget sets how much clock time [Fleet.Until] may advance before
// it fails the test (default 20s).
func WithUntilBudget(d time.Duration) Option {
	return func(o *fleetOptions) { o.untilBudget = d }
}

// WithLogger gives every member the logger l (each coordinator adds its own
// instance attribute). The default discards logs.
func WithLogger(l *slog.Logger) Option {
	return func(o *fleetOptions) { o.logger = l }
}

// WithFailureLogs captures every member's logs at debug level and writes
// them to the test log if the test fails. It takes the place of a
// [WithLogger] logger.
func WithFailureLogs() Option {
	return func(o *fleetOptions) { o.failureLogs = true }
}

// logBuffer is an io.Writer safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// withFailHandler replaces t.Fatal: onFail receives the failure message and
// the fleet then panics with a fleetFailure value that the caller recovers
// (see runCollecting in the tests).
func withFailHandler(onFail func(string)) Option {
	return func(o *fleetOptions) { o.onFail = onFail }
}

// fleetWatchdog bounds the real time of one RunFleet.
const fleetWatchdog = 2 * time.Minute

// HarnessConfig returns the fleet's default member configuration:
// LeaseDuration 1.5s, OpTimeout 200ms, ReplanInterval equal to the
// lease, ReconcileInterval 400ms, DrainDeadline half the lease,
// RebalanceDelay 0, MinCutWeight 1 (the fleet's ranged splits hold tens of
// records, and each weighs its records), other knobs as
// coordination.DefaultConfig.
func HarnessConfig() coordination.Config {
	cfg := coordination.DefaultConfig()
	cfg.LeaseDuration = 1500 * time.Millisecond
	cfg.OpTimeout = 200 * time.Millisecond
	cfg.ReplanInterval = cfg.LeaseDuration
	cfg.ReconcileInterval = 400 * time.Millisecond
	cfg.DrainDeadline = cfg.LeaseDuration / 2
	cfg.RebalanceDelay = 0
	cfg.MinCutWeight = 1
	return cfg
}

// RunFleet runs fn with a new fleet inside a synctest bubble
// (synctest.Test), and stops the fleet before the bubble returns. fn gets
// the bubble's *testing.T. A bubble that never goes idle (a busy loop in the
// code under test) would hang synctest.Wait: after two minutes of real time
// RunFleet panics naming the test instead.
func RunFleet(t *testing.T, fn func(t *testing.T, f *Fleet), opts ...Option) {
	t.Helper()
	name := t.Name()
	watchdog := time.AfterFunc(fleetWatchdog, func() {
		panic(fmt.Sprintf("testkit: %s ran for %v of real time without finishing (busy loop inside the bubble?)", name, fleetWatchdog))
	})
	defer watchdog.Stop()
	synctest.Test(t, func(t *testing.T) {
		f := NewFleet(t, opts...)
		fn(t, f)
	})
}

// NewFleet creates an empty fleet: a mock clock, a memstore sharing it, a
// hollywood engine and the invariant recorder. Call it inside a synctest
// bubble. The fleet registers its own stop (every live member aborted, the
// store closed, the final invariant checks) with t.Cleanup.
func NewFleet(t testing.TB, opts ...Option) *Fleet {
	t.Helper()
	o := fleetOptions{untilBudget: 20 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		// Members discard their logs unless asked (a coordinator's nil
		// Logger would mean slog.Default(): a property run would flood the
		// test's output).
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.failureLogs {
		buf := &logBuffer{}
		o.logger = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		// Registered before the fleet's own cleanup, so it runs after it.
		t.Cleanup(func() {
			if t.Failed() {
				t.Log("member logs:\n" + buf.String())
			}
		})
	}
	cfg := HarnessConfig()
	for _, m := range o.cfgMutators {
		m(&cfg)
	}
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatalf("testkit: new engine: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Fleet{
		t:       t,
		opts:    o,
		cfg:     cfg,
		clock:   mock,
		store:   memstore.New(cfg.LeaseDuration, memstore.WithClock(mock)),
		engine:  e,
		checker: NewChecker(),
		ctx:     ctx,
		cancel:  cancel,
		members: make(map[string]*Member),
		skewed:  make(map[string]*skewedClock),
	}
	for name, rate := range o.clockRates {
		if rate <= 0 {
			t.Fatalf("testkit: WithClockRate(%q, %v): the rate must be positive", name, rate)
		}
		m := clock.NewMock()
		m.Set(mock.Now())
		f.skewed[name] = &skewedClock{mock: m, rate: rate}
	}
	t.Cleanup(f.Close)
	return f
}

// Clock returns the fleet's mock clock.
func (f *Fleet) Clock() *clock.Mock { return f.clock }

// Store returns the shared store (no faults).
func (f *Fleet) Store() *memstore.Store { return f.store }

// Engine returns the shared hollywood engine.
func (f *Fleet) Engine() *actor.Engine { return f.engine }

// Checker returns the fleet's invariant checker.
func (f *Fleet) Checker() *Checker { return f.checker }

// Config returns the fleet-wide member configuration (before per-member
// mutators).
func (f *Fleet) Config() coordination.Config { return f.cfg }

// Step is the largest clock step [Fleet.Advance] takes: LeaseDuration/12.
func (f *Fleet) Step() time.Duration { return f.cfg.LeaseDuration / 12 }

// Now returns the mock clock's time.
func (f *Fleet) Now() time.Time { return f.clock.Now() }

// Fail fails the test (or, under the system property, the schedule) with
// the formatted message.
func (f *Fleet) Fail(format string, args ...any) {
	f.t.Helper()
	msg := fmt.Sprintf(format, args...)
	if f.opts.onFail != nil {
		f.opts.onFail(msg)
		panic(fleetFailure{msg})
	}
	f.t.Fatal(msg)
}

// fleetFailure is the panic value of a failed fleet under a fail handler.
type fleetFailure struct{ msg string }

// Start spawns and starts member id with planner p; mutators adjust its
// configuration after the fleet's. Starting an id whose previous incarnation
// crashed models a restart with the same InstanceID. A spawn or start error
// fails the test; use [Fleet.TryStart] to test it.
func (f *Fleet) Start(id string, p coordination.Planner, mutators ...func(*coordination.Config)) *Member {
	f.t.Helper()
	m, err := f.TryStart(id, p, mutators...)
	if err != nil {
		f.Fail("testkit: start member %s: %v", id, err)
	}
	return m
}

// TryStart is [Fleet.Start] returning the Spawn or Start error instead of
// failing the test.
func (f *Fleet) TryStart(id string, p coordination.Planner, mutators ...func(*coordination.Config)) (*Member, error) {
	f.t.Helper()
	if old := f.members[id]; old != nil && old.Alive() {
		f.Fail("testkit: member %s is already running; Crash or Depart it first", id)
	}
	return f.startAs(id, id, p, mutators...)
}

// StartTwin starts a second live process with InstanceID instance, tracked
// as member name, while the member of that InstanceID may still run: the
// live-twin scenario (docs/protocol.md, "Sessions").
func (f *Fleet) StartTwin(name, instance string, p coordination.Planner, mutators ...func(*coordination.Config)) *Member {
	f.t.Helper()
	if old := f.members[name]; old != nil && old.Alive() {
		f.Fail("testkit: member %s is already running", name)
	}
	m, err := f.startAs(name, instance, p, mutators...)
	if err != nil {
		f.Fail("testkit: start twin %s: %v", name, err)
	}
	return m
}

func (f *Fleet) startAs(name, instance string, p coordination.Planner, mutators ...func(*coordination.Config)) (*Member, error) {
	if f.rec == nil {
		rec, err := NewRecorder(f.ctx, f.store, p.Fingerprint(), f.checker)
		if err != nil {
			return nil, fmt.Errorf("start recorder: %w", err)
		}
		f.rec = rec
	}
	cfg := f.cfg
	cfg.InstanceID = instance
	cfg.Clock = f.clock
	if c := f.skewed[name]; c != nil {
		cfg.Clock = c.mock
	}
	reg := prometheus.NewRegistry()
	cfg.Metrics = reg
	cfg.Logger = f.opts.logger
	for _, mut := range mutators {
		mut(&cfg)
	}
	fs := NewFaultStore(f.store)
	if f.armNext != nil {
		f.armNext(fs)
		f.armNext = nil
	}
	c, err := actors.Spawn(f.engine, fs, cfg)
	if err != nil {
		return nil, err
	}
	m := f.members[name]
	if m == nil {
		m = &Member{id: name, instance: instance, f: f}
		f.members[name] = m
		f.order = append(f.order, name)
	} else {
		f.checker.Restarted(name)
	}
	m.reset(c, fs, cfg)
	m.registry = reg
	m.coord.SetWaker(m.waker)
	if err := c.Start(p); err != nil {
		c.Abort()
		m.crashed = true
		return m, err
	}
	f.settle()
	return m, nil
}

// ArmNextStart runs arm on the fault store of the next member started,
// before its coordinator starts, so that faults can hit its startup writes.
func (f *Fleet) ArmNextStart(arm func(*FaultStore)) { f.armNext = arm }

// Member returns member id (nil if it was never started).
func (f *Fleet) Member(id string) *Member { return f.members[id] }

// Members returns every member ever started, in first-start order.
func (f *Fleet) Members() []*Member {
	out := make([]*Member, 0, len(f.order))
	for _, id := range f.order {
		out = append(out, f.members[id])
	}
	return out
}

// Live returns the members that are running (not crashed, not departed).
func (f *Fleet) Live() []*Member {
	var out []*Member
	for _, m := range f.Members() {
		if m.Alive() {
			out = append(out, m)
		}
	}
	return out
}

// Crash aborts member id (coordination Abort): it writes nothing more and
// its leases, presence and leadership expire by TTL.
func (f *Fleet) Crash(id string) {
	f.t.Helper()
	m := f.mustMember(id)
	if !m.Alive() {
		return
	}
	m.coord.Abort()
	m.crashed = true
	f.checker.Restarted(m.id)
	f.settle()
}

// Partition cuts member id off the store (see [FaultStore.Partition]).
func (f *Fleet) Partition(id string) { f.mustMember(id).store.Partition(); f.settle() }

// Heal ends member id's partition.
func (f *Fleet) Heal(id string) { f.mustMember(id).store.Heal(); f.settle() }

func (f *Fleet) mustMember(id string) *Member {
	f.t.Helper()
	m := f.members[id]
	if m == nil {
		f.Fail("testkit: no member %s", id)
	}
	return m
}

// settle lets every goroutine of the bubble run until idle, then pumps every
// live member (poll and policy) until no member produced an event, and checks
// the invariants.
func (f *Fleet) settle() {
	f.t.Helper()
	synctest.Wait()
	for range 16 {
		busy := false
		for _, m := range f.Live() {
			if m.pump() {
				busy = true
			}
		}
		synctest.Wait()
		if !busy {
			break
		}
	}
	f.CheckInvariants()
}

// Pump polls every live member, applies its policy, and checks the
// invariants, without advancing the clock.
func (f *Fleet) Pump() { f.t.Helper(); f.settle() }

// Advance moves the mock clock forward by d in steps of at most
// LeaseDuration/12. After each step it yields as much real (bubble) time as
// the step, lets every goroutine run until idle, pumps every live member and
// checks the invariants.
func (f *Fleet) Advance(d time.Duration) {
	f.t.Helper()
	step := f.Step()
	for d > 0 {
		s := min(step, d)
		d -= s
		f.clock.Add(s)
		for _, name := range slices.Sorted(maps.Keys(f.skewed)) { // in a fixed order: timers fire in it
			f.skewed[name].add(s)
		}
		f.steps++
		time.Sleep(s)
		f.settle()
	}
}

// Until advances the clock step by step (as [Fleet.Advance]) until cond
// holds and returns the clock time that took; it fails the test naming what
// if cond does not hold within the fleet's until budget (default 20s of clock
// time).
func (f *Fleet) Until(what string, cond func() bool) time.Duration {
	f.t.Helper()
	start := f.clock.Now()
	f.settle()
	for !cond() {
		if f.clock.Since(start) >= f.opts.untilBudget {
			f.Fail("testkit: %s did not happen within %v of clock time\n%s", what, f.opts.untilBudget, f.Describe())
		}
		f.Advance(f.Step())
	}
	return f.clock.Since(start)
}

// CheckInvariants runs the continuous invariant checks (I1 to I5) and fails
// the test on any new violation.
func (f *Fleet) CheckInvariants() {
	f.t.Helper()
	f.checker.Check(false)
	f.checkLiveRanges()
	v := f.checker.Violations()
	if len(v) > f.reported {
		f.reported = len(v)
		f.Fail("testkit: invariant violated:\n%s\n%s", strings.Join(v, "\n"), f.Describe())
	}
}

// CheckVerdicts checks I6: every live member received a verdict and all are
// equal. Call it at the end of a bounded run that reached a verdict.
func (f *Fleet) CheckVerdicts() {
	f.t.Helper()
	verdicts := make(map[string]coordination.Event)
	for _, m := range f.Live() {
		verdicts[m.id] = m.verdict
	}
	f.checker.CheckVerdicts(verdicts)
	f.CheckInvariants()
}

// AllSettled reports whether every live member has a verdict.
func (f *Fleet) AllSettled() bool {
	for _, m := range f.Live() {
		if m.verdict == nil {
			return false
		}
	}
	return true
}

// Leader returns the owner of the live leader key ("" if none).
func (f *Fleet) Leader() string {
	e, ok, err := f.store.Get(f.ctx, store.Ephemeral, protocol.KeyLeader)
	if err != nil || !ok {
		return ""
	}
	l, err := protocol.DecodeLeader(protocol.KeyLeader, e.Value)
	if err != nil {
		f.Fail("testkit: leader key: %v", err)
	}
	return l.Owner
}

// PlanRecord is the part of the stored plan record (docs/protocol.md, "Records") that
// [Fleet.Plan] reports.
type PlanRecord struct {
	// Fingerprint is the job's full planner fingerprint.
	Fingerprint string
	// Generation is the generation of the leadership that last wrote it.
	Generation uint64
	// Finality says whether the plan is complete.
	Finality coordination.PlanFinality
	// Planned is a lower bound on the number of progress records.
	Planned uint64
}

// Plan returns the stored plan record; false if there is none yet.
func (f *Fleet) Plan() (PlanRecord, bool) {
	e, ok, err := f.store.Get(f.ctx, store.Durable, protocol.KeyPlan)
	if err != nil || !ok {
		return PlanRecord{}, false
	}
	p, err := protocol.DecodePlan(protocol.KeyPlan, e.Value)
	if err != nil {
		f.Fail("testkit: plan record: %v", err)
	}
	return PlanRecord{Fingerprint: p.Fingerprint, Generation: p.Generation, Finality: p.Finality, Planned: p.Planned}, true
}

// Record returns split's latest recorded state ([Checker.Current]): its
// split record's fields with the progress of its progress record.
func (f *Fleet) Record(split coordination.SplitID) (RecordVersion, bool) {
	return f.checker.Current(split)
}

// Holders returns the live members whose folded view holds split, sorted.
func (f *Fleet) Holders(split coordination.SplitID) []string {
	var out []string
	for _, m := range f.Live() {
		if m.Holds(split) {
			out = append(out, m.id)
		}
	}
	sort.Strings(out)
	return out
}

// Describe renders the fleet's state for failure messages: the clock, every
// member's folded view and every split's latest record.
func (f *Fleet) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fleet at %s:\n", f.clock.Now().Format("15:04:05.000"))
	for _, m := range f.Members() {
		fmt.Fprintf(&b, "  %s\n", m)
	}
	for _, id := range f.checker.Splits() {
		v, _ := f.Record(id)
		fmt.Fprintf(&b, "  split %s: %s\n", id, v)
	}
	return b.String()
}

// Close stops the fleet: every live member is aborted, the recorder stopped,
// the store closed, and the final invariant checks run. It runs
// automatically in the test's cleanup; calling it twice is harmless.
func (f *Fleet) Close() {
	if f.closed {
		return
	}
	f.closed = true
	for _, m := range f.Members() {
		if m.Alive() {
			m.coord.Abort()
			m.crashed = true
		}
	}
	synctest.Wait()
	if f.rec != nil {
		f.rec.Stop()
	}
	f.cancel()
	_ = f.store.Close()
	synctest.Wait()
	f.checker.Check(true)
	if v := f.checker.Violations(); len(v) > f.reported {
		f.reported = len(v)
		msg := fmt.Sprintf("testkit: invariant violated:\n%s", strings.Join(v, "\n"))
		if f.opts.onFail != nil {
			f.opts.onFail(msg)
			return
		}
		f.t.Error(msg)
	}
}
