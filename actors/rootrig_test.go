package actors

import (
	"sync"
	"testing"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/store/memstore"
)

// rootRig is a root actor alone on an engine of its own (call it inside a
// synctest bubble), its peers absent unless a test records them.
type rootRig struct {
	e   *actor.Engine
	v   *worker.Env
	out *worker.Outbox
	mu  sync.Mutex // guards what the recorders keep
}

// newRootRig makes the engine and the env; record the peers a test
// watches, then spawn the root with start.
func newRootRig(t *testing.T) *rootRig {
	t.Helper()
	e, clk := workertest.NewEngine(t)
	cfg := workertest.Config(t, clk, "w1")
	v := workertest.ActorEnv(e, memstore.New(cfg.LeaseDuration, memstore.WithClock(clk)), cfg, "n", nil)
	t.Cleanup(v.Cancel)
	return &rootRig{e: e, v: v, out: worker.NewOutbox(v.Latch)}
}

// record spawns an actor named name that keeps every message it receives
// in *msgs (read under rig.mu) and returns its PID.
func (rig *rootRig) record(t *testing.T, name string, msgs *[]any) *actor.PID {
	pid := rig.e.Spawn(func() actor.Receiver { return workertest.Recorder{Mu: &rig.mu, Msgs: msgs} }, name)
	t.Cleanup(func() { <-rig.e.Poison(pid).Done() })
	return pid
}

// start spawns the root.
func (rig *rootRig) start(t *testing.T) {
	rig.v.PIDs.Root = rig.e.Spawn(newRoot(rig.v, rig.out), "root")
	t.Cleanup(func() { <-rig.e.Poison(rig.v.PIDs.Root).Done() })
}
