package actors

import (
	"context"
	"log/slog"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// Spawn starts one worker's coordinator actors on engine e over store st and
// returns its handle. It validates cfg (Config.Validate), requires
// st.LeaseTTL() == cfg.LeaseDuration, resolves the instance id (generated
// when empty) and a fresh nonce, and registers metrics; it does no store
// I/O. Errors are *coordination.Error of kind Fatal. Several workers may
// share one engine and one store.
func Spawn(e *actor.Engine, st store.Store, cfg coordination.Config) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if e == nil {
		return nil, &coordination.Error{Kind: coordination.Fatal, Reason: "Spawn needs an actor engine, got nil"}
	}
	if st == nil {
		return nil, &coordination.Error{Kind: coordination.Fatal, Reason: "Spawn needs a store, got nil"}
	}
	if ttl := st.LeaseTTL(); ttl != cfg.LeaseDuration {
		return nil, coordination.Errorf(coordination.Fatal, "store lease TTL %s differs from Config.LeaseDuration %s; build the store with the same duration", ttl, cfg.LeaseDuration)
	}
	id := cfg.InstanceID
	if id == "" {
		id = "spate-" + randomHex()
	}
	cfg.InstanceID = id
	if cfg.Clock == nil {
		cfg.Clock = clock.New()
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	log := logger.With("instance", id)
	v := &env{
		e:     e,
		raw:   st,
		cfg:   cfg,
		clk:   cfg.Clock,
		id:    id,
		nonce: randomHex(),
		log:   log,
		met:   newMetrics(cfg.Metrics, id, log),
		out:   &outbox{},
	}
	v.session.Store(&v.nonce)
	v.st = &guardedStore{Store: st, halted: &v.halted, met: v.met}
	v.cap, _ = store.MaxValueSize(st) // sees through decorators (store.Wrapper)
	v.ctx, v.cancel = context.WithCancel(context.Background())
	commits := newCommitWriters(v)
	v.commits = commits
	commits.start(v)
	name := id + "." + v.nonce[:12]
	spawn := func(p actor.Producer, kind string) *actor.PID {
		return e.Spawn(p, "coordination-"+kind, actor.WithID(name), actor.WithMiddleware(recoverMiddleware(v, kind), backlogMiddleware(v)), actor.WithMaxRestarts(0))
	}
	v.pid.watch = spawn(newWatch(v), "watch")
	v.pid.lease = spawn(newLease(v), "lease")
	v.pid.leader = spawn(newLeader(v), "leader")
	v.pid.assign = spawn(newAssign(v), "assign")
	v.pid.splitWriter = spawn(newSplitWriter(v), "splitwriter")
	v.pid.revoke = spawn(newRevoke(v), "revoke")
	v.pid.root = spawn(newRoot(v), "coordinator")
	return &Coordinator{v: v}, nil
}
