package testkit

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// The system property of issues #4 and #5 (SPEC §30, ARCHITECTURE §5 layer
// 5): random fleets run random schedules of commits, completions, crashes,
// restarts, partitions, watch outages, dropped and maybe-landed writes, clock advances,
// Fail and Release calls, joins and departures, with workers that consent to, decline or ignore revocations.
// The fleet checks the invariants of §30.4 after every step; once the faults
// stop, every live worker reaches AllComplete or Stalled, all the same (I6).
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
	numStepKinds
)

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
	worker int // index into the worker names
	n      int // advance: clock steps; work: Work; revoke: Revoke
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
	maxInFlight []int // per worker
	poison      int   // index of a split every worker fails whenever gained; -1 for none
	steps       []schedStep
}

func (s schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workers %d, split weights %v, MaxAttempts %d, MaxInFlight %v", s.workers, s.weights, s.maxAttempts, s.maxInFlight)
	if s.poison >= 0 {
		fmt.Fprintf(&b, ", every worker fails split s%02d", s.poison)
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
	}
	s.poison = -1
	if rapid.IntRange(0, 9).Draw(t, "poisoned") < 3 {
		s.poison = rapid.IntRange(0, len(s.weights)-1).Draw(t, "poison")
	}
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
		case stepDrop, stepMaybeLand:
			st.n = rapid.IntRange(0, len(faultTargets)-1).Draw(t, fmt.Sprintf("target%d", i))
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
	return runCollecting(t, func(f *Fleet) { execute(f, s) },
		WithConfig(func(c *coordination.Config) { c.MaxAttempts = s.maxAttempts }), WithUntilBudget(40*time.Second))
}

func execute(f *Fleet, s schedule) {
	weights := make([]uint64, len(s.weights))
	copy(weights, s.weights)
	p := NewTestPlanner(jobFP, Splits(len(weights), weights...)...)
	policies := make([]Policy, maxWorkers)
	var poison coordination.SplitID
	if s.poison >= 0 {
		poison = coordination.SplitID(fmt.Sprintf("s%02d", s.poison))
		for i := range policies {
			policies[i].FailSplits = map[coordination.SplitID]bool{poison: true}
		}
	}
	start := func(i int) {
		m := f.Start(workerName(i), p, setMaxInFlight(s.maxInFlight[i]))
		m.Policy = policies[i]
	}
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
				f.Crash(m.ID())
			}
		case stepRestart, stepJoin:
			if m == nil {
				start(st.worker)
			}
		case stepPartition:
			if m != nil {
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
				m.Store().DropNextWrite(faultTargets[st.n].match)
			}
		case stepMaybeLand:
			if m != nil {
				m.Store().MaybeLandNextWrite(faultTargets[st.n].match)
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
	f.Until("every live worker reaches a verdict", f.AllSettled)
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
			if !quarantined || v.Completed+v.Quarantined != uint64(len(weights)) {
				f.Fail("%s: %#v with %d splits (quarantined: %t)", m.ID(), v, len(weights), quarantined)
			}
		}
	}
}

func TestFleetSystemProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := drawSchedule(rt)
		if failure := runSchedule(t, s); failure != "" {
			rt.Fatalf("%s\nschedule:\n%s", failure, s)
		}
	})
}

// failer routes a helper's Fatalf to the fleet's failure path.
type failer struct{ f *Fleet }

func (x failer) Helper()                           {}
func (x failer) Fatalf(format string, args ...any) { x.f.Fail(format, args...) }
