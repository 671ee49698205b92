package actors

import (
	"context"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// BenchmarkCommit measures what the coordinator adds to a commit's store
// write: "commit" is Commit of a held split on a memstore, "update" the raw
// Update of a record of the same size on that store, run alternately in one
// process. On a memstore the write itself costs about a microsecond, so the
// difference is the coordinator's own cost per commit (the commit writer,
// its routing, the record's encoding, the metrics); bench/fleet's F5 gives
// the ratio against a NATS round trip.
func BenchmarkCommit(b *testing.B) {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		b.Fatal(err)
	}
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "committer"
	cfg.StartupGrace = 0
	cfg.Logger = workertest.DiscardLogger()
	st := memstore.New(cfg.LeaseDuration)
	c, err := Spawn(e, st, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Abort)
	if err := c.Start(workertest.FinalPlan("a")); err != nil {
		b.Fatal(err)
	}
	for held := false; !held; {
		evs, err := c.Poll()
		if err != nil {
			b.Fatal(err)
		}
		for _, ev := range evs {
			if _, ok := ev.(coordination.Gained); ok {
				held = true
			}
		}
		time.Sleep(time.Millisecond) // waiting for the startup I/O, not for a result
	}
	ctx := context.Background()
	prog, ok, err := st.Get(ctx, store.Durable, protocol.ProgressKey("a"))
	if err != nil || !ok {
		b.Fatalf("the progress record of a: found %v, %v", ok, err)
	}
	rev, _, err := st.Create(ctx, store.Durable, "raw", prog.Value)
	if err != nil {
		b.Fatal(err)
	}
	var mark int64
	b.Run("commit", func(b *testing.B) {
		for b.Loop() {
			mark++
			if err := c.Commit("a", coordination.SplitProgress{Watermark: mark, State: []byte("bench")}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("update", func(b *testing.B) {
		for b.Loop() {
			var ok bool
			if rev, ok, err = st.Update(ctx, store.Durable, "raw", prog.Value, rev); err != nil || !ok {
				b.Fatalf("raw update: landed %v, %v", ok, err)
			}
		}
	})
}
