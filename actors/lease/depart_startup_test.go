package lease

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// TestDepartingStopsTheStartupAnnounce: a starting worker whose presence
// key holds another session's value (a crashed run's) challenges it and
// waits out the twin window; the root's Departing, told to the lease
// actor, which owns "Depart began", stops its startup goroutine from
// taking the key over, and the startup's end is no failure. Before the
// lease owned the fact, the handle set Env.Gone.
func TestDepartingStopsTheStartupAnnounce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, clk := workertest.NewEngine(t)
		mem := memstore.New(time.Hour, memstore.WithClock(clk))
		cfg := workertest.Config(t, clk, "w1")
		v := workertest.ActorEnv(e, mem, cfg, "n1", nil)
		key := protocol.WorkerKey("w1")
		stale := protocol.EncodePresence(protocol.PresenceRecord{Nonce: "crashed"})
		if _, ok, err := mem.Create(context.Background(), store.Ephemeral, key, stale); err != nil || !ok {
			t.Fatalf("create the stale presence key: %v %v", ok, err)
		}
		var mu sync.Mutex
		var msgs []any
		rec := e.Spawn(func() actor.Receiver { return workertest.Recorder{Mu: &mu, Msgs: &msgs} }, "rec")
		v.PIDs = worker.PIDs{Root: rec, Watch: rec, Leader: rec, SplitWriter: rec, Revoke: rec}
		pid := e.Spawn(New(v), "lease")
		v.PIDs.Lease = pid
		t.Cleanup(func() {
			v.Cancel()
			<-e.Poison(pid).Done()
			<-e.Poison(rec).Done()
			v.WG.Wait()
		})
		e.Send(pid, wire.StartJob{Job: wire.Job{Fingerprint: "job:v1"}})
		synctest.Wait()
		if c, ok, _ := mem.Get(context.Background(), store.Ephemeral, protocol.ChallengeKey("w1")); !ok || string(c.Value) != "n1" {
			t.Fatalf("the startup is not waiting out the twin window: challenge key %q (found %v)", c.Value, ok)
		}
		e.Send(pid, wire.Departing{})
		synctest.Wait()
		for range 24 { // well past the twin window (LeaseDuration/4)
			clk.Add(cfg.LeaseDuration / 12)
			synctest.Wait()
		}
		if got, ok, err := mem.Get(context.Background(), store.Ephemeral, key); err != nil || !ok || string(got.Value) != string(stale) {
			t.Fatalf("after Departing the presence key holds %q (found %v, err %v), want the crashed session's value untouched", got.Value, ok, err)
		}
		if err := v.Failure(); err != nil {
			t.Fatalf("a startup stopped by Departing failed the worker: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			if _, ok := m.(wire.SessionChanged); ok {
				t.Fatal("the lease told a session's start after Departing")
			}
		}
	})
}
