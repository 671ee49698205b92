package testkit

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/rapidchecks"
	"github.com/spate-go/coordination/store"
)

// The system property of issues #4, #5 and #12: random fleets run random
// schedules of commits, completions, crashes, restarts, partitions, watch
// outages, dropped and maybe-landed writes (one-shot, or every matching
// write for a while), writes that land after the caller's timeout, reads
// and listings failing on their own, watches that go silent, duplicated and
// stale watch events, clock advances, Fail and Release calls, joins and
// departures, with workers that consent to, decline or ignore revocations
// and whose clocks may run up to 10% fast or slow. The fleet checks the
// safety invariants of [Checker] after every step; once the faults stop,
// every live worker reaches AllComplete or Stalled, all the same (I6). Three
// liveness invariants are checked:
//
//   - L1, a worker whose writes all land never loses a split: a member
//     incarnation is healthy when, while it ran, it was never partitioned
//     and none of its writes was dropped and none of its reads failed
//     (its writes may land late or lose their replies, its watches may
//     break, go silent, repeat or echo, its clock may be skewed). A healthy
//     incarnation receives no Lost for a tenancy in which it received no
//     RevokeRequested (a forced or declined revocation is a move, not a
//     loss).
//   - L2, a split that never fails is never quarantined: when no split is
//     poison, no worker called Fail, nobody crashed and every incarnation
//     was healthy, no split is quarantined and no attempt is charged (a
//     record a claim with a lost reply left naming its claimant's session
//     is re-claimed by it free, or handed back, also when it departs).
//   - L3, a healthy fleet holds what it is assigned: after the faults stop,
//     a runnable split that a live member's assignment record names is held
//     by that member within healthyFleetHoldsWithin (2 x LeaseDuration +
//     StartupGrace + DrainDeadline, a bound that depends on neither the
//     number of splits nor the heartbeats the run took), checked at every
//     step until the verdicts.
//
// Every input is drawn before the bubble starts; each schedule runs in its
// own synctest bubble and returns a verdict, and the *rapid.T fails outside
// the bubble (rapid.Check calls T.Deadline, which panics inside one). A
// failing schedule shrinks to a short, readable listing of its steps.

type stepKind int

const (
	stepAdvance stepKind = iota
	stepWork
	stepRevoke
	stepCrash
	stepRestart
	stepPartition
	stepHeal
	stepFail
	stepRelease
	stepJoin
	stepDepart
	stepDrop
	stepMaybeLand
	stepWatchOutage
	stepLandEvery // every write of a target maybe-lands or lands late, for a while
	stepLandLate  // the next write of a target lands after its caller's timeout
	stepFailReads // reads of a prefix fail, for a while
	stepSilence   // the open watches go silent
	stepDuplicate // live watch events are delivered twice, until the faults stop
	stepStale     // live watch events are followed by stale echoes, until the faults stop
	numStepKinds
)

// readTargets are the reads a read failure can hit.
var readTargets = []struct {
	name string
	ks   store.Keyspace
	pref string
}{
	{"presence and leader", store.Ephemeral, ""},
	{"split records", store.Durable, protocol.PrefixSplit},
	{"the job family", store.Durable, protocol.PrefixJob},
	{"progress records", store.Durable, protocol.PrefixProgress},
	{"specs", store.Durable, "spec."},
}

// clockRates are the rates a worker's clock may run at (most run true).
var clockRates = []float64{1, 1, 1, 0.95, 1.05, 0.9, 1.1}

// faultTargets are the writes a drop or maybe-landed fault can hit.
var faultTargets = []struct {
	name  string
	match Match
}{
	{"a split-record write", Match{Prefix: protocol.PrefixSplit, Ops: OpUpdate}},
	{"a hand-back or fail", Match{Prefix: protocol.PrefixSplit, Ops: OpUpdate, Value: OwnerNull()}},
	{"a commit or fence", Match{Prefix: protocol.PrefixProgress, Ops: OpCreate | OpUpdate}},
	{"a seeding create", Match{Prefix: protocol.PrefixJob, Ops: OpCreate}},
	{"a presence write", Match{Keyspace: store.Ephemeral, Prefix: "worker.", Ops: OpCreate | OpUpdate}},
	{"a leader write", Match{Keyspace: store.Ephemeral, Prefix: "leader", Ops: OpCreate | OpUpdate}},
	{"an assignment write", Match{Prefix: protocol.PrefixAssign, Ops: OpCreate | OpUpdate}},
	{"a plan write", Match{Prefix: protocol.KeyPlan, Ops: OpUpdate}},
}

type schedStep struct {
	kind   stepKind
	worker int  // index into the worker names
	n      int  // advance: clock steps; work: Work; revoke: Revoke; faults: the target
	dur    int  // landEvery, failReads: clock steps the fault lasts
	late   bool // landEvery: land late instead of losing the reply
}

var workNames = map[Work]string{WorkHold: "hold", WorkCommit: "commit", WorkComplete: "complete", WorkStream: "stream"}
var revokeNames = map[Revoke]string{RevokeConsent: "consent", RevokeDecline: "decline", RevokeIgnore: "ignore"}

func (s schedStep) String() string {
	w := workerName(s.worker)
	switch s.kind {
	case stepAdvance:
		return fmt.Sprintf("advance %d steps", s.n)
	case stepWork:
		return fmt.Sprintf("%s works: %s", w, workNames[Work(s.n)])
	case stepRevoke:
		return fmt.Sprintf("%s answers revocations: %s", w, revokeNames[Revoke(s.n)])
	case stepCrash:
		return "crash " + w
	case stepRestart:
		return "start " + w + " (restart if it ran before)"
	case stepPartition:
		return "partition " + w
	case stepHeal:
		return "heal " + w + " (partition and watch outage)"
	case stepWatchOutage:
		return "break " + w + "'s watches and refuse new ones until healed"
	case stepFail:
		return w + " fails its first held split"
	case stepRelease:
		return w + " releases its first held split"
	case stepJoin:
		return "join " + w + " (start it if not running)"
	case stepDepart:
		return "depart " + w
	case stepDrop:
		return fmt.Sprintf("%s: drop the next write of %s", w, faultTargets[s.n].name)
	case stepMaybeLand:
		return fmt.Sprintf("%s: the next write of %s lands but reports an error", w, faultTargets[s.n].name)
	case stepLandEvery:
		how := "lands but reports an error"
		if s.late {
			how = "lands after its caller's timeout"
		}
		return fmt.Sprintf("%s: every write of %s %s, for %d steps", w, faultTargets[s.n].name, how, s.dur)
	case stepLandLate:
		return fmt.Sprintf("%s: the next write of %s lands after its caller's timeout", w, faultTargets[s.n].name)
	case stepFailReads:
		return fmt.Sprintf("%s: reads of %s fail, for %d steps", w, readTargets[s.n].name, s.dur)
	case stepSilence:
		return "silence " + w + "'s open watches"
	case stepDuplicate:
		return w + "'s watches deliver every live event twice"
	case stepStale:
		return w + "'s watches echo stale events"
	}
	return "?"
}

func workerName(i int) string { return fmt.Sprintf("w%d", i+1) }

const maxWorkers = 5

// scheduleWatchdog bounds the real time of one schedule.
const scheduleWatchdog = 60 * time.Second

type schedule struct {
	workers     int // started at the beginning
	weights     []uint64
	maxAttempts uint32
	maxInFlight []int     // per worker
	clockRates  []float64 // per worker
	poison      int       // index of a split every worker fails whenever gained; -1 for none
	cut         bool      // ranged splits that workers cut when asked (runtime splits)
	steps       []schedStep
}

func (s schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workers %d, split weights %v, MaxAttempts %d, MaxInFlight %v, clock rates %v", s.workers, s.weights, s.maxAttempts, s.maxInFlight, s.clockRates)
	if s.poison >= 0 {
		fmt.Fprintf(&b, ", every worker fails split s%02d", s.poison)
	}
	if s.cut {
		b.WriteString(", ranged splits of 100 records per weight, cut when asked")
	}
	b.WriteString("\n")
	for i, st := range s.steps {
		fmt.Fprintf(&b, "  %2d. %s\n", i+1, st)
	}
	return b.String()
}

func drawSchedule(t *rapid.T) schedule {
	s := schedule{
		workers:     rapid.IntRange(1, 4).Draw(t, "workers"),
		weights:     rapid.SliceOfN(rapid.Uint64Range(1, 5), 1, 12).Draw(t, "weights"),
		maxAttempts: uint32(rapid.IntRange(2, 4).Draw(t, "maxAttempts")),
		maxInFlight: rapid.SliceOfN(rapid.IntRange(1, 8), maxWorkers, maxWorkers).Draw(t, "maxInFlight"),
		clockRates:  rapid.SliceOfN(rapid.SampledFrom(clockRates), maxWorkers, maxWorkers).Draw(t, "clockRates"),
	}
	s.poison = -1
	if rapid.IntRange(0, 9).Draw(t, "poisoned") < 3 {
		s.poison = rapid.IntRange(0, len(s.weights)-1).Draw(t, "poison")
	}
	s.cut = rapid.Bool().Draw(t, "cut")
	n := rapid.IntRange(0, 24).Draw(t, "steps")
	for i := range n {
		st := schedStep{
			kind:   stepKind(rapid.IntRange(0, int(numStepKinds)-1).Draw(t, fmt.Sprintf("kind%d", i))),
			worker: rapid.IntRange(0, maxWorkers-1).Draw(t, fmt.Sprintf("worker%d", i)),
		}
		switch st.kind {
		case stepAdvance:
			st.n = rapid.IntRange(1, 24).Draw(t, fmt.Sprintf("advance%d", i))
		case stepWork:
			st.n = rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("work%d", i))
		case stepRevoke:
			st.n = rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("revoke%d", i))
		case stepDrop, stepMaybeLand, stepLandLate:
			st.n = rapid.IntRange(0, len(faultTargets)-1).Draw(t, fmt.Sprintf("target%d", i))
		case stepLandEvery:
			st.n = rapid.IntRange(0, len(faultTargets)-1).Draw(t, fmt.Sprintf("target%d", i))
			st.late = rapid.Bool().Draw(t, fmt.Sprintf("late%d", i))
			st.dur = rapid.IntRange(1, 36).Draw(t, fmt.Sprintf("dur%d", i))
		case stepFailReads:
			st.n = rapid.IntRange(0, len(readTargets)-1).Draw(t, fmt.Sprintf("reads%d", i))
			st.dur = rapid.IntRange(1, 36).Draw(t, fmt.Sprintf("dur%d", i))
		}
		s.steps = append(s.steps, st)
	}
	return s
}

// runSchedule runs one schedule in its own bubble and returns "" or why it
// failed.
func runSchedule(t *testing.T, s schedule) string {
	// A schedule whose bubble never goes idle (a livelock in the code under
	// test) would hang synctest.Wait forever; report it with the schedule.
	watchdog := time.AfterFunc(scheduleWatchdog, func() {
		panic(fmt.Sprintf("testkit: a system-property schedule ran for %v of real time without finishing (busy loop inside the bubble?)\nschedule:\n%s", scheduleWatchdog, s))
	})
	defer watchdog.Stop()
	opts := []Option{WithConfig(func(c *coordination.Config) { c.MaxAttempts = s.maxAttempts }), WithUntilBudget(40 * time.Second)}
	for i, r := range s.clockRates {
		if r != 1 {
			opts = append(opts, WithClockRate(workerName(i), r))
		}
	}
	return runCollecting(t, func(f *Fleet) { execute(f, s) }, opts...)
}

// incarnation is one run of a member in a schedule, for the liveness
// invariants: its events are m.Log()[from:] up to the next incarnation's.
type incarnation struct {
	m         *Member
	from      int
	unhealthy string // why L1 does not apply; "" while healthy
}

func execute(f *Fleet, s schedule) {
	weights := make([]uint64, len(s.weights))
	copy(weights, s.weights)
	splits := Splits(len(weights), weights...)
	if s.cut {
		splits = rangedSplits(weights)
	}
	p := NewTestPlanner(jobFP, splits...)
	policies := make([]Policy, maxWorkers)
	for i := range policies {
		policies[i].Cut = s.cut
	}
	var poison coordination.SplitID
	if s.poison >= 0 {
		poison = coordination.SplitID(fmt.Sprintf("s%02d", s.poison))
		for i := range policies {
			policies[i].FailSplits = map[coordination.SplitID]bool{poison: true}
		}
	}
	var incs []*incarnation
	current := map[string]*incarnation{}
	start := func(i int) {
		m := f.Start(workerName(i), p, setMaxInFlight(s.maxInFlight[i]))
		m.Policy = policies[i]
		inc := &incarnation{m: m, from: len(m.Log())}
		incs = append(incs, inc)
		current[m.ID()] = inc
	}
	sick := func(m *Member, why string) {
		if inc := current[m.ID()]; inc.unhealthy == "" {
			inc.unhealthy = why
		}
	}
	crashed, failed := false, false
	for i := range s.workers {
		start(i)
	}
	member := func(i int) *Member {
		m := f.Member(workerName(i))
		if m == nil || !m.Alive() {
			return nil
		}
		return m
	}
	for _, st := range s.steps {
		m := member(st.worker)
		switch st.kind {
		case stepAdvance:
			f.Advance(f.Step() * time.Duration(st.n))
		case stepWork:
			policies[st.worker].Work = Work(st.n)
			if m != nil {
				m.Policy.Work = Work(st.n)
			}
		case stepRevoke:
			policies[st.worker].Revoke = Revoke(st.n)
			if m != nil {
				m.Policy.Revoke = Revoke(st.n)
			}
		case stepCrash:
			if m != nil {
				crashed = true
				f.Crash(m.ID())
			}
		case stepRestart, stepJoin:
			if m == nil {
				start(st.worker)
			}
		case stepPartition:
			if m != nil {
				sick(m, "partitioned")
				f.Partition(m.ID())
			}
		case stepHeal:
			if m != nil {
				m.Store().UnblockWatches()
				f.Heal(m.ID())
			}
		case stepWatchOutage:
			if m != nil {
				m.Store().BlockWatches()
				f.Pump()
			}
		case stepFail:
			if m != nil && len(m.HeldIDs()) > 0 {
				failed = true
				_ = m.Fail(m.HeldIDs()[0], "system property")
				f.Pump()
			}
		case stepRelease:
			if m != nil && len(m.HeldIDs()) > 0 {
				_ = m.Release(m.HeldIDs()[0])
				f.Pump()
			}
		case stepDepart:
			if m != nil {
				_ = m.Depart()
			}
		case stepDrop:
			if m != nil {
				sick(m, "a write dropped")
				m.Store().DropNextWrite(faultTargets[st.n].match)
			}
		case stepMaybeLand:
			if m != nil {
				m.Store().MaybeLandNextWrite(faultTargets[st.n].match)
			}
		case stepLandLate:
			if m != nil {
				m.Store().LandLateNextWrite(faultTargets[st.n].match)
			}
		case stepLandEvery:
			if m != nil {
				arm := m.Store().MaybeLandEveryWrite
				if st.late {
					arm = m.Store().LandLateEveryWrite
				}
				fault := arm(faultTargets[st.n].match)
				f.Advance(f.Step() * time.Duration(st.dur))
				m.Store().Remove(fault)
			}
		case stepFailReads:
			if m != nil {
				sick(m, "reads failed")
				r := readTargets[st.n]
				fault := m.Store().FailReads(r.ks, r.pref)
				f.Advance(f.Step() * time.Duration(st.dur))
				m.Store().Remove(fault)
			}
		case stepSilence:
			if m != nil {
				m.Store().SilenceWatches()
				f.Pump()
			}
		case stepDuplicate:
			if m != nil {
				m.Store().DuplicateWatchEvents()
			}
		case stepStale:
			if m != nil {
				m.Store().StaleWatchEvents()
			}
		}
	}
	// The faults stop: heal everyone, make sure someone runs, and let every
	// live worker complete what it gets.
	for _, m := range f.Live() {
		m.Store().Heal()
		m.Store().UnblockWatches()
		m.Store().Disarm()
		m.Policy.Work, m.Policy.Revoke = WorkComplete, RevokeConsent
	}
	if len(f.Live()) == 0 {
		start(0)
		f.Member(workerName(0)).Policy.Work = WorkComplete
	}

	for _, m := range f.Live() {
		m.Policy.FailSplits = policies[0].FailSplits
	}
	held := newHeldWithin(f, healthyFleetHoldsWithin(f.Config()))
	f.Until("every live worker reaches a verdict", func() bool {
		held.check()
		return f.AllSettled()
	})
	f.CheckVerdicts()
	checkRevocationAccounting(failer{f}, f)
	quarantined := false
	for _, id := range f.Checker().Splits() {
		if v, _ := f.Record(id); v.Status == "quarantined" {
			quarantined = true
		}
	}
	if poison != "" {
		if v, _ := f.Record(poison); v.Status != "quarantined" {
			f.Fail("poison split %s ended %s, want quarantined", poison, v)
		}
	}
	for _, m := range f.Live() {
		switch v := m.Verdict().(type) {
		case coordination.AllComplete:
			if quarantined {
				f.Fail("%s: AllComplete while a split is quarantined (G7)", m.ID())
			}
		case coordination.Stalled:
			if !quarantined || v.Completed+v.Quarantined != uint64(len(f.Checker().Splits())) {
				f.Fail("%s: %#v with %d splits (quarantined: %t)", m.ID(), v, len(f.Checker().Splits()), quarantined)
			}
		}
	}
	if s.cut {
		residualsMade.Add(int64(f.CheckCoverage(!quarantined)))
	}
	checkHealthyKeepTheirSplits(f, incs)
	if poison == "" && !failed && !crashed && allHealthy(incs) {
		checkNothingCharged(f)
	}
}

// rangedSplits returns the splits "s00", ... of weights, each a range of
// 100 records per unit of weight, weighing its records.
func rangedSplits(weights []uint64) []coordination.PlannedSplit {
	out := make([]coordination.PlannedSplit, len(weights))
	lo := int64(0)
	for i, w := range weights {
		n := int64(w) * 100
		out[i] = coordination.PlannedSplit{Spec: coordination.SplitSpec{ID: coordination.SplitID(fmt.Sprintf("s%02d", i)), Descriptor: RangeDescriptor(lo, lo+n), Weight: uint64(n)}}
		lo += n
	}
	return out
}

// healthyFleetHoldsWithin is L3's bound: once the faults stopped, a split a
// live member is assigned is held within it. It covers what may still be
// owed to the faults when they stop (a crashed or starved session's lease
// running out, a leader key expiring and the next leader's startup hold, a
// drain reaching its deadline) and a few heartbeats of I/O; it does not
// depend on how many splits there are, nor grow with the heartbeats the run
// took (a claim pipeline that takes a batch per heartbeat would).
func healthyFleetHoldsWithin(cfg coordination.Config) time.Duration {
	return 2*cfg.LeaseDuration + cfg.StartupGrace + cfg.DrainDeadline
}

// heldWithin checks L3 at every step of the run after the faults stopped:
// for every live member and every runnable split its assignment record
// names and it does not hold, it notes when that was first seen (not before
// the faults stopped), and fails once one waited longer than bound.
type heldWithin struct {
	f       *Fleet
	bound   time.Duration
	waiting map[string]time.Time // member + "/" + split → first seen assigned and not held
	longest time.Duration
}

func newHeldWithin(f *Fleet, bound time.Duration) *heldWithin {
	return &heldWithin{f: f, bound: bound, waiting: map[string]time.Time{}}
}

// check takes one look at the fleet.
func (h *heldWithin) check() {
	now := h.f.Now()
	seen := map[string]bool{}
	for _, m := range h.f.Live() {
		e, ok, err := h.f.Store().Get(context.Background(), store.Durable, protocol.AssignKey(m.InstanceID()))
		if err != nil || !ok {
			continue
		}
		a, err := protocol.DecodeAssignment(e.Key, e.Value)
		if err != nil {
			continue
		}
		for _, id := range a.Splits {
			if v, ok := h.f.Record(id); !ok || v.Status != "runnable" || m.Holds(id) {
				continue
			}
			k := m.ID() + "/" + string(id)
			seen[k] = true
			since, ok := h.waiting[k]
			if !ok {
				h.waiting[k] = now
				continue
			}
			h.longest = max(h.longest, now.Sub(since))
			if now.Sub(since) > h.bound {
				h.f.Fail("%s has been assigned split %s without holding it for %v after the faults stopped, above the bound %v (L3)\n%s", m.ID(), id, now.Sub(since), h.bound, h.f.Describe())
			}
		}
	}
	for k := range h.waiting {
		if !seen[k] {
			delete(h.waiting, k)
		}
	}
}

// checkHealthyKeepTheirSplits checks L1: a healthy incarnation received no
// Lost for a tenancy in which it received no RevokeRequested.
func checkHealthyKeepTheirSplits(f *Fleet, incs []*incarnation) {
	ends := map[*incarnation]int{}
	last := map[*Member]*incarnation{}
	for _, inc := range incs {
		if prev := last[inc.m]; prev != nil {
			ends[prev] = inc.from
		}
		last[inc.m] = inc
	}
	for _, inc := range incs {
		if inc.unhealthy != "" {
			continue
		}
		log := inc.m.Log()
		end, ok := ends[inc]
		if !ok {
			end = len(log)
		}
		revoked := map[coordination.SplitID]bool{}
		for _, ev := range log[inc.from:end] {
			switch e := ev.(type) {
			case coordination.Gained:
				revoked[e.Split.ID] = false
			case coordination.RevokeRequested:
				revoked[e.Split] = true
			case coordination.Lost:
				if !revoked[e.Split] {
					f.Fail("%s lost split %s although all its writes landed (L1); events of the incarnation: %v", inc.m.ID(), e.Split, log[inc.from:end])
				}
			}
		}
	}
}

// allHealthy reports whether every incarnation was healthy.
func allHealthy(incs []*incarnation) bool {
	for _, inc := range incs {
		if inc.unhealthy != "" {
			return false
		}
	}
	return true
}

// checkNothingCharged checks L2: no split is quarantined and no attempt was
// charged.
func checkNothingCharged(f *Fleet) {
	for _, id := range f.Checker().Splits() {
		if v, _ := f.Record(id); v.Status == "quarantined" || v.Attempts != 0 {
			f.Fail("split %s ended %s although nothing failed and every worker was healthy (L2)", id, v)
		}
	}
}

// ciSchedules is how many schedules TestFleetSystemProperty runs when
// neither -rapid.checks nor RAPID_CHECKS says (-short runs a fifth).
const ciSchedules = 200

// residualsMade counts the residuals the schedules of a run of
// TestFleetSystemProperty created, so the test can tell the runtime-split
// draw is not vacuous.
var residualsMade atomic.Int64

func TestFleetSystemProperty(t *testing.T) {
	rapidchecks.Default(t, ciSchedules)
	residualsMade.Store(0)
	schedules := 0
	rapid.Check(t, func(rt *rapid.T) {
		s := drawSchedule(rt)
		schedules++
		if failure := runSchedule(t, s); failure != "" {
			rt.Fatalf("%s\nschedule:\n%s", failure, s)
		}
	})
	t.Logf("%d schedules made %d runtime splits", schedules, residualsMade.Load())
	if schedules >= 50 && residualsMade.Load() == 0 && !t.Failed() {
		t.Fatalf("none of %d schedules cut a split: the runtime-split part of the property is vacuous", schedules)
	}
}

// failer routes a helper's Fatalf to the fleet's failure path.
type failer struct{ f *Fleet }

func (x failer) Helper()                           {}
func (x failer) Fatalf(format string, args ...any) { x.f.Fail(format, args...) }
