package actors

import (
	"context"
	"log/slog"
	"sync"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/commitwriter"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/leader"
	"github.com/spate-go/coordination/actors/lease"
	"github.com/spate-go/coordination/actors/revoke"
	"github.com/spate-go/coordination/actors/splitwriter"
	"github.com/spate-go/coordination/actors/watch"
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
		id = "spate-" + worker.RandomHex()
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
	// Every field of the Env is set here, before any actor or goroutine
	// of the worker runs, and never written after (docs/architecture.md,
	// "What `worker.Env` holds").
	nonce := worker.RandomHex()
	metrics := worker.NewMetrics(cfg.Metrics, id, log)
	latch := worker.NewLatch()
	ctx, cancel := context.WithCancel(context.Background())
	valueCap, _ := store.MaxValueSize(st) // sees through decorators (store.Wrapper)
	// Every actor's PID is known before any is spawned: each is given its
	// peers' PIDs at spawn (worker.PIDs).
	name := id + "." + nonce[:12]
	v := &worker.Env{
		Engine:   e,
		Raw:      st,
		Store:    &worker.GuardedStore{Store: st, Latch: latch, Metrics: metrics},
		Config:   cfg,
		Clock:    cfg.Clock,
		ID:       id,
		Nonce:    nonce,
		Log:      log,
		Metrics:  metrics,
		PIDs:     worker.NewPIDs(e, name),
		ValueCap: valueCap,
		Latch:    latch,
		Backlog:  &worker.Backlog{},
		Ctx:      ctx,
		Cancel:   cancel,
		WG:       &sync.WaitGroup{},
	}
	// The outbox is the root's and the handle's alone (not in Env).
	out := worker.NewOutbox(latch)
	commits := commitwriter.New(v)
	v.Commits = commits // the commit writer needs the Env it is part of
	commits.Start()
	for _, a := range []struct {
		p    actor.Producer
		kind string
		pid  *actor.PID
	}{
		{watch.New(v), "watch", v.PIDs.Watch},
		{lease.New(v), "lease", v.PIDs.Lease},
		{leader.New(v), "leader", v.PIDs.Leader},
		{splitwriter.New(v), "splitwriter", v.PIDs.SplitWriter},
		{revoke.New(v), "revoke", v.PIDs.Revoke},
		{newRoot(v, out), "coordinator", v.PIDs.Root},
	} {
		got := e.Spawn(a.p, worker.Kind(a.kind), actor.WithID(name), actor.WithMiddleware(recoverMiddleware(v, a.kind), worker.BacklogMiddleware(v)), actor.WithMaxRestarts(0))
		if !got.Equals(a.pid) { // hollywood names a process kind/id (worker.NewPIDs)
			v.Cancel()
			return nil, coordination.Errorf(coordination.Fatal, "the %s actor was spawned as %s, not as %s, the PID its peers were given; worker.NewPIDs no longer matches hollywood's naming", a.kind, got, a.pid)
		}
	}
	return &Coordinator{v: v, out: out, commits: commits}, nil
}
