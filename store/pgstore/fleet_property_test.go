package pgstore

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/testkit"
)

// The fleet property on PostgreSQL: the real-time counterpart of testkit's
// system property (which runs on memstore under a mock clock, where the
// server's clock of pgstore cannot follow). Random fleets of real
// coordinators, each on a pgstore handle of its own against the shared
// server, run random schedules of crashes, restarts, joins, departures,
// lost LISTEN connections and killed connections (statements in flight
// fail, their writes may have landed), with members that consent to,
// decline or ignore revocations. testkit's Recorder follows the job's
// records and its Checker checks the safety invariants (I1 to I5) on every
// version and event; once the faults stop, every live member must reach
// the same verdict, AllComplete (I6, liveness), within a bound.

// fleetRuns and fleetChecksPerRun are how many schedules run: fleetRuns
// property runs in parallel (one per core of CI's two), each of
// fleetChecksPerRun schedules.
const (
	fleetRuns         = 2
	fleetChecksPerRun = 25
)

// fleetLease is the members' LeaseDuration: short, so that takeovers after
// a crash happen within a second or two.
const fleetLease = time.Second

// fleetDeadline bounds how long the fleet may take to finish once the
// faults stopped.
const fleetDeadline = 30 * time.Second

func TestFleetPropertyOnPostgres(t *testing.T) {
	s := pgtest.Need(t, srv)
	// Not parallel with the package's other tests: the conformance suite's
	// timing checks share the server and the two cores.
	if testing.Short() {
		t.Skip("real-time fleet schedules skipped in -short mode")
	}
	// The schedules are drawn from seeds (rapid's generators) rather than
	// by rapid.Check, whose -rapid.checks would also change the
	// conformance suite's properties in this binary; a failure names its
	// seed, and PGFLEET_SEED reruns from it.
	base := time.Now().UnixNano() % 1_000_000
	if v, err := strconv.ParseInt(os.Getenv("PGFLEET_SEED"), 10, 64); err == nil {
		base = v
	}
	t.Logf("schedules from seed %d (PGFLEET_SEED=%d reruns them)", base, base)
	gen := rapid.Custom(drawFleetSchedule)
	for run := range fleetRuns {
		t.Run(fmt.Sprint(run), func(t *testing.T) {
			t.Parallel()
			for i := range fleetChecksPerRun {
				seed := base + int64(run*fleetChecksPerRun+i)
				sc := gen.Example(int(seed))
				if failure := runFleetSchedule(t, s, sc); failure != "" {
					t.Fatalf("schedule of seed %d (PGFLEET_SEED=%d):\n%s\n%s", seed, seed-int64(run*fleetChecksPerRun+i), sc, failure)
				}
			}
		})
	}
}

// revokeMode is how a member answers a revocation.
type revokeMode int

const (
	revokeConsent revokeMode = iota // commit one more, then ReleaseDrained
	revokeDecline                   // DeclineRevoke
	revokeIgnore                    // keep working; forced at the deadline
)

var revokeModeNames = []string{"consent", "decline", "ignore"}

// fleetStepKind is one fault of a schedule.
type fleetStepKind int

const (
	stepCrash      fleetStepKind = iota // Abort: leases expire by TTL
	stepRestart                         // a new incarnation of a crashed or departed member
	stepJoin                            // a new member
	stepDepart                          // Depart, handing back what it holds
	stepKillListen                      // terminate the member's LISTEN connection: its watches break
	stepKillConns                       // terminate every connection of the member: statements in flight fail
	numFleetSteps
)

var fleetStepNames = []string{"crash", "restart", "join", "depart", "kill-listen", "kill-connections"}

type fleetStep struct {
	kind   fleetStepKind
	member int           // index into the members; join ignores it
	after  time.Duration // real time after the previous step
}

// fleetSchedule is one drawn run.
type fleetSchedule struct {
	workers int // started at once
	weights []uint64
	commits int // commits per split, the last one completed
	revoke  []revokeMode
	steps   []fleetStep
}

const maxFleetMembers = 4

func (sc fleetSchedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %d workers, splits of weights %v, %d commits per split, revocations:", sc.workers, sc.weights, sc.commits)
	for i, r := range sc.revoke {
		fmt.Fprintf(&b, " m%d %s", i, revokeModeNames[r])
	}
	for _, st := range sc.steps {
		fmt.Fprintf(&b, "\n  after %s: %s m%d", st.after, fleetStepNames[st.kind], st.member)
	}
	return b.String()
}

func drawFleetSchedule(rt *rapid.T) fleetSchedule {
	sc := fleetSchedule{
		workers: rapid.IntRange(1, 3).Draw(rt, "workers"),
		weights: rapid.SliceOfN(rapid.Uint64Range(1, 5), 1, 8).Draw(rt, "weights"),
		commits: rapid.IntRange(1, 4).Draw(rt, "commits"),
	}
	for i := range maxFleetMembers {
		sc.revoke = append(sc.revoke, revokeMode(rapid.IntRange(0, 2).Draw(rt, fmt.Sprintf("revoke m%d", i))))
	}
	for range rapid.IntRange(0, 5).Draw(rt, "steps") {
		sc.steps = append(sc.steps, fleetStep{
			kind:   fleetStepKind(rapid.IntRange(0, int(numFleetSteps)-1).Draw(rt, "step")),
			member: rapid.IntRange(0, maxFleetMembers-1).Draw(rt, "member"),
			after:  time.Duration(rapid.IntRange(0, 8).Draw(rt, "after")) * 100 * time.Millisecond,
		})
	}
	return sc
}

// fleetRun is one schedule's fleet.
type fleetRun struct {
	t       *testing.T
	srv     *pgtest.Server
	job     string
	plan    *testkit.TestPlanner
	sc      fleetSchedule
	checker *testkit.Checker
	members []*fleetMember
	// lease is the members' LeaseDuration, 0 for fleetLease; their
	// OpTimeout is a quarter of it. Set it before the job's first store
	// opens: a job's lease is fixed once it starts.
	lease time.Duration
}

// memberLease returns the LeaseDuration of a member started now.
func (r *fleetRun) memberLease() time.Duration {
	if r.lease > 0 {
		return r.lease
	}
	return fleetLease
}

// runFleetSchedule runs sc on a job of its own and returns why it failed,
// or "".
func runFleetSchedule(t *testing.T, s *pgtest.Server, sc fleetSchedule) string {
	job := pgtest.UniqueName("fleet")
	r := &fleetRun{t: t, srv: s, job: job, sc: sc, checker: testkit.NewChecker(),
		plan: testkit.NewTestPlanner("pg-fleet:"+job, testkit.Splits(len(sc.weights), sc.weights...)...)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	recStore, err := New(Config{DSN: r.dsn("recorder"), Job: job}, fleetLease)
	if err != nil {
		return err.Error()
	}
	defer recStore.Close()
	rec, err := testkit.NewRecorder(ctx, recStore, r.plan.Fingerprint(), r.checker)
	if err != nil {
		return fmt.Sprintf("recorder: %v", err)
	}
	defer rec.Stop()
	defer r.stopAll()
	for range sc.workers {
		if msg := r.start(-1); msg != "" {
			return msg
		}
	}
	for _, st := range sc.steps {
		time.Sleep(st.after) // the schedule's pacing, not a wait for a condition
		if msg := r.apply(st); msg != "" {
			return msg
		}
	}
	if len(r.live()) == 0 {
		if msg := r.start(-1); msg != "" {
			return msg
		}
	}
	if msg := r.finish(ctx, recStore); msg != "" {
		return msg
	}
	if v := r.checker.Violations(); len(v) > 0 {
		return strings.Join(v, "\n")
	}
	return ""
}

// dsn is the DSN of a store handle of member name: its application_name
// lets the faults find its connections.
func (r *fleetRun) dsn(name string) string {
	return r.srv.DSN("postgres") + "&application_name=" + r.job + "-" + name
}

// start starts member i again (a restart with the same InstanceID), or a
// new member when i is -1 or beyond the members.
func (r *fleetRun) start(i int) string {
	if i < 0 || i >= len(r.members) {
		if len(r.members) >= maxFleetMembers {
			return ""
		}
		i = len(r.members)
		r.members = append(r.members, &fleetMember{run: r, id: fmt.Sprintf("m%d", i), revoke: r.sc.revoke[i]})
	}
	m := r.members[i]
	if m.alive() {
		return ""
	}
	if m.c != nil {
		r.checker.Restarted(m.id)
	}
	if err := m.start(); err != nil {
		return fmt.Sprintf("start %s: %v", m.id, err)
	}
	return ""
}

// apply runs one fault step.
func (r *fleetRun) apply(st fleetStep) string {
	if st.kind == stepJoin {
		return r.start(-1)
	}
	if st.member >= len(r.members) {
		return ""
	}
	m := r.members[st.member]
	switch st.kind {
	case stepRestart:
		return r.start(st.member)
	case stepCrash:
		m.halt(false)
	case stepDepart:
		m.halt(true)
	case stepKillListen:
		r.terminate(m, "AND query LIKE 'LISTEN%'")
	case stepKillConns:
		r.terminate(m, "")
	}
	return ""
}

// terminate ends member m's server connections that match cond.
func (r *fleetRun) terminate(m *fleetMember, cond string) {
	_ = r.srv.Exec(context.Background(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 "+cond, r.job+"-"+m.id)
}

// live returns the members running now.
func (r *fleetRun) live() []*fleetMember {
	var out []*fleetMember
	for _, m := range r.members {
		if m.alive() {
			out = append(out, m)
		}
	}
	return out
}

// finish waits until every live member reached its verdict and the
// recorder has seen every record version the store holds, then checks the
// verdicts and the final invariants.
func (r *fleetRun) finish(ctx context.Context, st *Store) string {
	deadline := time.Now().Add(fleetDeadline)
	for {
		done := true
		for _, m := range r.live() {
			if m.err() != nil {
				return fmt.Sprintf("member %s failed: %v", m.id, m.err())
			}
			done = done && m.verdictOf() != nil
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("liveness: %s after the faults stopped, live members without a verdict: %s", fleetDeadline, r.pending())
		}
		time.Sleep(20 * time.Millisecond) // polling an explicit condition
	}
	verdicts := map[string]coordination.Event{}
	for _, m := range r.live() {
		verdicts[m.id] = m.verdictOf()
		if _, ok := m.verdictOf().(coordination.AllComplete); !ok {
			return fmt.Sprintf("member %s ended %T, want AllComplete (no split is poison)", m.id, m.verdictOf())
		}
	}
	if msg := r.awaitRecorder(ctx, st); msg != "" {
		return msg
	}
	r.checker.CheckVerdicts(verdicts)
	r.checker.Check(true)
	return ""
}

// awaitRecorder waits until the checker holds the latest revision of every
// split and progress record in the store.
func (r *fleetRun) awaitRecorder(ctx context.Context, st *Store) string {
	entries, err := st.List(ctx, store.Durable, "")
	if err != nil {
		return fmt.Sprintf("listing the job: %v", err)
	}
	want := map[string]store.Revision{}
	for _, e := range entries {
		want[e.Key] = e.Revision
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, ps := range testkit.Splits(len(r.sc.weights)) {
		id := ps.Spec.ID
		for _, key := range []string{protocol.SplitKey(id), protocol.ProgressKey(id)} {
			rev, ok := want[key]
			if !ok {
				return fmt.Sprintf("the job has no %s at the end", key)
			}
			for !r.seen(id, rev) {
				if time.Now().After(deadline) {
					return fmt.Sprintf("the recorder never saw %s at revision %d", key, rev)
				}
				time.Sleep(10 * time.Millisecond) // polling an explicit condition
			}
		}
	}
	return ""
}

// seen reports whether the checker holds a version of split at rev.
func (r *fleetRun) seen(split coordination.SplitID, rev store.Revision) bool {
	for _, v := range r.checker.Versions(split) {
		if v.Revision == rev {
			return true
		}
	}
	return false
}

// pending names the live members without a verdict and what they hold.
func (r *fleetRun) pending() string {
	var parts []string
	for _, m := range r.live() {
		if m.verdictOf() == nil {
			parts = append(parts, m.String())
		}
	}
	return strings.Join(parts, "; ")
}

// stopAll aborts every live member and waits for their pumps.
func (r *fleetRun) stopAll() {
	for _, m := range r.members {
		m.halt(false)
	}
}

// fleetMember is one member: a coordinator on a store handle and engine of
// its own, and a goroutine that polls it and answers its events.
type fleetMember struct {
	run    *fleetRun
	id     string
	revoke revokeMode

	c      *actors.Coordinator
	st     *Store
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	held   map[coordination.SplitID]*fleetHeld
	ended  coordination.Event // the verdict
	failed error
}

// fleetHeld is one held tenancy.
type fleetHeld struct {
	epoch     coordination.LeaseEpoch
	mark      int64 // the last committed (or carried) watermark
	commits   int
	revoked   bool
	revokeDid bool
}

// start spawns a new incarnation and its pump.
func (m *fleetMember) start() error {
	lease := m.run.memberLease()
	st, err := New(Config{DSN: m.run.dsn(m.id), Job: m.run.job}, lease)
	if err != nil {
		return err
	}
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		return err
	}
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = m.id
	cfg.LeaseDuration = lease
	cfg.OpTimeout = lease / 4
	cfg.ReplanInterval = lease
	cfg.ReconcileInterval = lease * 3 / 5
	cfg.DrainDeadline = lease / 2
	cfg.RebalanceDelay = 0
	cfg.StartupGrace = 0
	c, err := actors.Spawn(e, st, cfg)
	if err != nil {
		_ = st.Close()
		return err
	}
	if err := c.Start(m.run.plan); err != nil {
		c.Abort()
		_ = st.Close()
		return err
	}
	m.mu.Lock()
	m.c, m.st, m.held, m.ended, m.failed = c, st, map[coordination.SplitID]*fleetHeld{}, nil, nil
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	m.mu.Unlock()
	go m.pump(c, m.stop, m.done)
	return nil
}

// alive reports whether the member runs.
func (m *fleetMember) alive() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stop != nil
}

// halt ends the member: Depart (handing back what it holds) or a crash.
func (m *fleetMember) halt(depart bool) {
	m.mu.Lock()
	stop, done, c, st := m.stop, m.done, m.c, m.st
	m.stop = nil
	m.mu.Unlock()
	if stop == nil {
		return
	}
	close(stop)
	<-done
	if depart {
		m.mu.Lock()
		var held []coordination.SplitID
		for id := range m.held {
			held = append(held, id)
			m.run.checker.Surrendered(m.id, id)
		}
		m.held = nil
		m.mu.Unlock()
		_ = c.Depart(held...)
	} else {
		c.Abort()
	}
	_ = st.Close()
}

func (m *fleetMember) verdictOf() coordination.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ended
}

func (m *fleetMember) err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failed
}

func (m *fleetMember) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var held []string
	for id, h := range m.held {
		held = append(held, fmt.Sprintf("%s@%d", id, h.epoch))
	}
	return fmt.Sprintf("%s holds [%s]", m.id, strings.Join(held, " "))
}

// pump polls c every 10ms until stop, folding its events and applying the
// member's policy.
func (m *fleetMember) pump(c *actors.Coordinator, stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		evs, err := c.Poll()
		m.mu.Lock()
		if err != nil && m.failed == nil {
			m.failed = err
		}
		for _, ev := range evs {
			m.fold(ev)
		}
		m.act(c)
		m.mu.Unlock()
	}
}

// fold applies one event to the member's view and feeds the checker.
func (m *fleetMember) fold(ev coordination.Event) {
	m.run.checker.EventAs(m.id, m.id, ev)
	switch e := ev.(type) {
	case coordination.Gained:
		h := &fleetHeld{epoch: e.Epoch}
		if e.Progress != nil {
			h.mark = e.Progress.Watermark
		}
		m.held[e.Split.ID] = h
	case coordination.Lost:
		delete(m.held, e.Split)
	case coordination.RevokeRequested:
		if h := m.held[e.Split]; h != nil {
			h.revoked, h.revokeDid = true, false
		}
	case coordination.AllComplete, coordination.Stalled:
		m.ended = ev
	}
}

// act commits each held split once per pump, completing it at its last
// commit, and answers revocations by the member's mode.
func (m *fleetMember) act(c *actors.Coordinator) {
	for id, h := range m.held {
		if h.revoked && !h.revokeDid {
			switch m.revoke {
			case revokeConsent:
				err := m.commit(c, id, h, false)
				if err == nil && m.held[id] != nil {
					err = c.ReleaseDrained(id)
					if err == nil || coordination.KindOf(err) == coordination.Fenced {
						m.surrender(id)
					}
				}
				h.revokeDid = err == nil
				continue
			case revokeDecline:
				h.revoked = false
				_ = c.DeclineRevoke(id)
				continue
			case revokeIgnore:
				h.revokeDid = true
			}
		}
		_ = m.commit(c, id, h, h.commits+1 >= m.run.sc.commits)
	}
}

// commit commits split one record past its mark.
func (m *fleetMember) commit(c *actors.Coordinator, id coordination.SplitID, h *fleetHeld, completed bool) error {
	p := coordination.SplitProgress{Watermark: h.mark + 1, Completed: completed}
	err := c.Commit(id, p)
	switch {
	case err == nil && completed:
		m.surrender(id)
	case err == nil:
		h.mark, h.commits = p.Watermark, h.commits+1
	case coordination.KindOf(err) == coordination.Fenced:
		m.surrender(id)
	case coordination.KindOf(err) == coordination.Fatal:
		if m.failed == nil {
			m.failed = err
		}
	}
	return err
}

// surrender drops split after a voluntary end or a Fenced result.
func (m *fleetMember) surrender(id coordination.SplitID) {
	delete(m.held, id)
	m.run.checker.Surrendered(m.id, id)
}
