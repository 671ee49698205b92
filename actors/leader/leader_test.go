package leader

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// scriptStore is a memstore whose next operations on a key can be
// scripted, in the manner of client-go's per-verb reactors: fail, lose the
// compare without writing, or wait for a gate before calling through.
type scriptStore struct {
	*memstore.Store
	mu     sync.Mutex
	script map[string][]reaction // "op key" → reactions, taken in order
	calls  map[string]int        // "op key" → operations seen
}

// reaction is what one scripted operation does instead of, or before,
// calling the store.
type reaction struct {
	err  error         // returned without calling the store
	lose bool          // a compare reports lost without writing
	gate chan struct{} // wait until closed, ignoring the context, then call through
	land bool          // call through, then report the reply lost (Retryable) whatever happened
}

// on scripts the next operations op ("Create", "Update", "Get", "Delete",
// "List") on key.
func (s *scriptStore) on(op, key string, rs ...reaction) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.script == nil {
		s.script = map[string][]reaction{}
	}
	s.script[op+" "+key] = append(s.script[op+" "+key], rs...)
}

// reset drops every scripted reaction not taken yet.
func (s *scriptStore) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.script)
}

// count returns how many times op was called on key.
func (s *scriptStore) count(op, key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op+" "+key]
}

// take pops the next reaction for op on key; ok is false when none is
// scripted.
func (s *scriptStore) take(op, key string) (reaction, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = map[string]int{}
	}
	s.calls[op+" "+key]++
	rs := s.script[op+" "+key]
	if len(rs) == 0 {
		return reaction{}, false
	}
	s.script[op+" "+key] = rs[1:]
	r := rs[0]
	if r.gate != nil {
		s.mu.Unlock()
		<-r.gate
		s.mu.Lock()
	}
	return r, true
}

func (s *scriptStore) Create(ctx context.Context, ks store.Keyspace, key string, v []byte) (store.Revision, bool, error) {
	if r, ok := s.take("Create", key); ok && (r.err != nil || r.lose) {
		return 0, false, r.err
	}
	return s.Store.Create(ctx, ks, key, v)
}

func (s *scriptStore) Update(ctx context.Context, ks store.Keyspace, key string, v []byte, rev store.Revision) (store.Revision, bool, error) {
	r, ok := s.take("Update", key)
	if ok && (r.err != nil || r.lose) {
		return 0, false, r.err
	}
	nr, landed, err := s.Store.Update(ctx, ks, key, v, rev)
	if ok && r.land {
		return 0, false, errReplyLost
	}
	return nr, landed, err
}

// errReplyLost is the Retryable a land reaction reports.
var errReplyLost = coordination.Errorf(coordination.Retryable, "injected: reply lost")

func (s *scriptStore) Get(ctx context.Context, ks store.Keyspace, key string) (store.Entry, bool, error) {
	if r, ok := s.take("Get", key); ok && r.err != nil {
		return store.Entry{}, false, r.err
	}
	return s.Store.Get(ctx, ks, key)
}

func (s *scriptStore) List(ctx context.Context, ks store.Keyspace, prefix string) ([]store.Entry, error) {
	if r, ok := s.take("List", prefix); ok && r.err != nil {
		return nil, r.err
	}
	return s.Store.List(ctx, ks, prefix)
}

// gatedPlanner is a Planner that counts its calls and, while gate is set,
// waits for it to close before returning, ignoring its context (a planner
// that does not honour cancellation).
type gatedPlanner struct {
	*workertest.Planner
	gate  chan struct{}
	calls atomic.Int32
	mu    sync.Mutex
	pc    coordination.PlanContext // the last call's
	errs  []error                  // returned by the first calls, one each
}

// last returns the last call's PlanContext.
func (p *gatedPlanner) last() coordination.PlanContext {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pc
}

func (p *gatedPlanner) Plan(ctx context.Context, pc coordination.PlanContext) (coordination.SplitPlan, error) {
	p.calls.Add(1)
	p.mu.Lock()
	p.pc = pc
	var err error
	if len(p.errs) > 0 {
		err, p.errs = p.errs[0], p.errs[1:]
	}
	p.mu.Unlock()
	if p.gate != nil {
		<-p.gate
	}
	if err != nil {
		return coordination.SplitPlan{}, err
	}
	return p.Planner.Plan(ctx, pc)
}

// leaderRig runs a lone leader actor of worker w1 over a scriptStore in a
// synctest bubble; the test plays the watch and the lease by sending their
// messages.
type leaderRig struct {
	t       *testing.T
	e       *actor.Engine
	clk     *clock.Mock
	mem     *memstore.Store
	st      *scriptStore
	v       *worker.Env
	pid     *actor.PID
	reg     *prometheus.Registry
	replies *actor.PID   // a recorder: StepDownReply lands here
	sent    wire.Members // the live members as the rig last told them (send, playing the watch)
	mu      sync.Mutex
	got     []any
	planRev uint64
	revs    uint64 // revisions the rig's observations made up so far
}

// newLeaderRig runs the leader actor of worker w1 alone. The rig leaves the
// startup grace window out (StartupGrace 0), so an assignment is published
// as soon as the plan is; a test of the window sets it with mut.
func newLeaderRig(t *testing.T, p coordination.Planner, mut ...func(*coordination.Config)) *leaderRig {
	e, clk := workertest.NewEngine(t)
	mem := memstore.New(1500*time.Millisecond, memstore.WithClock(clk))
	lr := &leaderRig{t: t, e: e, clk: clk, mem: mem, st: &scriptStore{Store: mem}, reg: prometheus.NewPedanticRegistry()}
	cfg := workertest.Config(t, clk, "w1")
	cfg.StartupGrace = 0
	for _, f := range mut {
		f(&cfg)
	}
	v := workertest.ActorEnv(e, lr.st, cfg, "nonce-w1", lr.reg)
	lr.v = v
	lr.pid = e.Spawn(New(v), "leader")
	v.PIDs.Leader = lr.pid
	lr.replies = e.Spawn(func() actor.Receiver { return workertest.Recorder{Mu: &lr.mu, Msgs: &lr.got} }, "replies")
	t.Cleanup(func() {
		v.Cancel()
		<-e.Poison(lr.pid).Done()
		<-e.Poison(lr.replies).Done()
		v.WG.Wait()
	})
	lr.planRev = workertest.Put(t, mem, protocol.KeyPlan, protocol.EncodePlan(protocol.PlanRecord{Fingerprint: p.Fingerprint()}), 0)
	lr.send(wire.SessionChanged{Live: true, Nonce: "nonce-w1", Job: wire.Job{Planner: p, Fingerprint: p.Fingerprint(), FP: protocol.Fingerprint(p.Fingerprint())}})
	return lr
}

// send delivers msgs to the leader and waits for the bubble to settle.
func (lr *leaderRig) send(msgs ...any) {
	for _, m := range msgs {
		if p, ok := m.(wire.PresenceChanged); ok { // play the watch: the live members with the change
			m = lr.presence(p)
		}
		lr.e.Send(lr.pid, m)
	}
	synctest.Wait()
}

// presence applies p to the live members the rig plays the watch's of,
// and returns p carrying them.
func (lr *leaderRig) presence(p wire.PresenceChanged) wire.PresenceChanged {
	p.Live = workertest.Presence(lr.sent, p.Instance, wire.Member{Nonce: p.Nonce, MaxInFlight: p.MaxInFlight}, !p.Deleted)
	lr.sent = p.Live
	return p
}

// join makes inst a live member of f with budget and session nonce, as a
// PresenceChanged of the watch would.
func (f *fleetView) join(inst string, budget uint32, nonce string) {
	f.live = workertest.Presence(f.live, inst, wire.Member{Nonce: nonce, MaxInFlight: budget}, true)
}

// goLive plays the watch coming up: the plan record, w1's presence, live.
func (lr *leaderRig) goLive() {
	pl := lr.plan()
	lr.send(recordmsg.PlanChanged{Plan: pl, Rev: lr.planRev},
		wire.PresenceChanged{Instance: "w1", Nonce: "nonce-w1", Rev: 1},
		wire.WatchesChanged{Live: true})
}

// beat advances the mock clock by a heartbeat interval and sends the tick.
func (lr *leaderRig) beat() {
	lr.clk.Add(lr.v.Config.LeaseDuration / 3)
	lr.send(wire.HeartbeatTicked{})
}

// plan reads the plan record.
func (lr *leaderRig) plan() protocol.PlanRecord {
	lr.t.Helper()
	e, ok, err := lr.mem.Get(context.Background(), store.Durable, protocol.KeyPlan)
	if err != nil || !ok {
		lr.t.Fatalf("plan record: found %v, err %v", ok, err)
	}
	pl, err := protocol.DecodePlan(protocol.KeyPlan, e.Value)
	if err != nil {
		lr.t.Fatal(err)
	}
	lr.planRev = uint64(e.Revision)
	return pl
}

// leaderKey reads the leader key; ok is false when it is absent.
func (lr *leaderRig) leaderKey() (protocol.LeaderRecord, uint64, bool) {
	lr.t.Helper()
	e, ok, err := lr.mem.Get(context.Background(), store.Ephemeral, protocol.KeyLeader)
	if err != nil {
		lr.t.Fatal(err)
	}
	if !ok {
		return protocol.LeaderRecord{}, 0, false
	}
	l, err := protocol.DecodeLeader(protocol.KeyLeader, e.Value)
	if err != nil {
		lr.t.Fatal(err)
	}
	return l, uint64(e.Revision), true
}

// assignment reads w's assignment record; ok is false when it is absent.
func (lr *leaderRig) assignment(w string) (protocol.AssignmentRecord, uint64, bool) {
	lr.t.Helper()
	e, ok, err := lr.mem.Get(context.Background(), store.Durable, protocol.AssignKey(w))
	if err != nil {
		lr.t.Fatal(err)
	}
	if !ok {
		return protocol.AssignmentRecord{}, 0, false
	}
	a, err := protocol.DecodeAssignment(protocol.AssignKey(w), e.Value)
	if err != nil {
		lr.t.Fatal(err)
	}
	return a, uint64(e.Revision), true
}

// splits counts the split records in the store.
func (lr *leaderRig) splits() int {
	lr.t.Helper()
	es, err := lr.mem.List(context.Background(), store.Durable, protocol.PrefixSplit)
	if err != nil {
		lr.t.Fatal(err)
	}
	return len(es)
}

// observeSplits plays the watch delivering every split record.
func (lr *leaderRig) observeSplits() {
	lr.t.Helper()
	es, err := lr.mem.List(context.Background(), store.Durable, protocol.PrefixSplit)
	if err != nil {
		lr.t.Fatal(err)
	}
	fp := protocol.Fingerprint("job:v1")
	var run recordmsg.RecordsChanged
	for _, e := range es {
		rec, err := protocol.DecodeSplit(e.Key, e.Value, fp)
		if err != nil {
			lr.t.Fatal(err)
		}
		run.Records = append(run.Records, recordmsg.RecordChanged{Split: rec.ID, Record: rec, Rev: uint64(e.Revision)})
	}
	lr.send(run)
}

// leading reports the leader gauge.
func (lr *leaderRig) leading() bool {
	lr.t.Helper()
	mfs, err := lr.reg.Gather()
	if err != nil {
		lr.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "coordination_leader" {
			return mf.GetMetric()[0].GetGauge().GetValue() == 1
		}
	}
	lr.t.Fatal("no coordination_leader gauge")
	return false
}

// failure is the latched Fatal, or nil.
func (lr *leaderRig) failure() error { return lr.v.Failure() }

// replied counts the StepDownReply messages received.
func (lr *leaderRig) replied() int {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	n := 0
	for _, m := range lr.got {
		if _, ok := m.(wire.StepDownReply); ok {
			n++
		}
	}
	return n
}

// mustLead fails unless w1 holds the leader key at generation gen.
func (lr *leaderRig) mustLead(gen uint64) {
	lr.t.Helper()
	l, _, ok := lr.leaderKey()
	if !ok || l.Nonce != "nonce-w1" || !lr.leading() {
		lr.t.Fatalf("leader key %+v (present %v), gauge %v; want w1 leading", l, ok, lr.leading())
	}
	if pl := lr.plan(); pl.Generation != gen {
		lr.t.Fatalf("plan generation %d, want %d", pl.Generation, gen)
	}
}

func TestLeaderElectsFencesPlansAndPublishes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lr := newLeaderRig(t, workertest.FinalPlan("a", "b", "c"))
		lr.goLive()
		lr.mustLead(1)
		if pl := lr.plan(); pl.Planned != 3 || pl.Finality != coordination.PlanFinal {
			t.Fatalf("plan %+v, want 3 planned and final", pl)
		}
		if n := lr.splits(); n != 3 {
			t.Fatalf("%d split records, want 3", n)
		}
		lr.observeSplits()
		a, _, ok := lr.assignment("w1")
		if !ok || a.Generation != 1 || len(a.Splits) != 3 {
			t.Fatalf("assignment %+v (present %v), want all 3 splits at generation 1", a, ok)
		}
		if got := workertest.CounterSum(t, lr.reg, "coordination_replans_total", "ok"); got != 1 {
			t.Fatalf("replans ok = %v, want 1", got)
		}
	})
}

// runs counts the planner runs by outcome label.
func (lr *leaderRig) runs(label string) float64 {
	return workertest.CounterSum(lr.t, lr.reg, "coordination_replans_total", label)
}

func TestStaleLeadResultsAreNeverApplied(t *testing.T) {
	tests := []struct {
		name string
		msg  any
	}{
		{"a lost plan publish would demote", planDone{outcome: planLost}},
		{"a landed fence would start a run", fenceDone{step: fenceLanded, plan: protocol.PlanRecord{Fingerprint: "job:v1", Generation: 1}, rev: 99}},
		{"a lost renewal would step down", renewDone{fate: leaderRenewLost}},
		{"a replan tick would start a run", replanDue{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &gatedPlanner{Planner: workertest.FinalPlan("a")}
				lr := newLeaderRig(t, p)
				lr.goLive()
				lr.mustLead(1)
				calls, rev := p.calls.Load(), lr.planRev
				ended := newLead(context.Background(), 1)
				ended.end()
				lr.send(leadResult{lead: ended, msg: tt.msg})
				lr.mustLead(1)
				if p.calls.Load() != calls || lr.planRev != rev {
					t.Fatalf("planner calls %d → %d, plan rev %d → %d: a stale result was applied", calls, p.calls.Load(), rev, lr.planRev)
				}
			})
		})
	}
}

// deleteLeaderKey deletes the leader key behind the leader's back.
func (lr *leaderRig) deleteLeaderKey() {
	lr.t.Helper()
	_, rev, ok := lr.leaderKey()
	if !ok {
		lr.t.Fatal("no leader key to delete")
	}
	if ok, err := lr.mem.Delete(context.Background(), store.Ephemeral, protocol.KeyLeader, store.Revision(rev)); err != nil || !ok {
		lr.t.Fatalf("delete leader key: %v %v", ok, err)
	}
}

// takeOver plays another worker winning the leader key after w1's was
// deleted, and the watch reporting both.
func (lr *leaderRig) takeOver() {
	lr.t.Helper()
	lr.deleteLeaderKey()
	nrev, ok, err := lr.mem.Create(context.Background(), store.Ephemeral, protocol.KeyLeader, protocol.EncodeLeader(protocol.LeaderRecord{Owner: "w2", Nonce: "nonce-w2", Generation: 2}))
	if err != nil || !ok {
		lr.t.Fatalf("create w2's leader key: %v %v", ok, err)
	}
	lr.send(recordmsg.LeaderChanged{Leader: protocol.LeaderRecord{Owner: "w2", Nonce: "nonce-w2", Generation: 2}, Rev: uint64(nrev)})
}

// reasonHas reports whether err is set and its reason contains s.
func reasonHas(err error, s string) bool {
	return err != nil && strings.Contains(worker.ReasonOf(err), s)
}

// newPartRig is a leader rig for testing one part of the leader (the
// planner run, the publisher) alone, over the rig's env: the rig's own
// actor stays idle, and whatever the part delivers to the leader lands in
// the rig's recorder (delivered).
func newPartRig(t *testing.T, p coordination.Planner, mut ...func(*coordination.Config)) *leaderRig {
	lr := newLeaderRig(t, p, mut...)
	lr.v.PIDs.Leader = lr.replies
	return lr
}

// delivered returns the messages delivered under lead d to the recorder.
func (lr *leaderRig) delivered(d *lead) []any {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	var got []any
	for _, m := range lr.got {
		if r, ok := m.(leadResult); ok && r.lead == d {
			got = append(got, r.msg)
		}
	}
	return got
}

// endedLead returns a lead of generation gen that ended.
func endedLead(gen uint64) *lead {
	d := newLead(context.Background(), gen)
	d.end()
	return d
}

// recorded returns the messages of type T the rig's recorder received.
func recorded[T any](lr *leaderRig) []T {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	var got []T
	for _, m := range lr.got {
		if x, ok := m.(T); ok {
			got = append(got, x)
		}
	}
	return got
}
