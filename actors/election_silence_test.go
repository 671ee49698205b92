package actors_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// A leader key that is gone while the worker's watch is silent and no
// listing succeeds (so no delete of it is ever watched or listed) stops
// blocking the worker's elections once it would have expired
// (docs/protocol.md, "Leadership"): the worker stands again and leads the
// next generation.
func TestALeaderKeyGoneUnseenStopsBlockingElections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk, mem, fs, c := faultedWorker(t)
		defer c.Abort()
		if err := c.Start(onePlan{ids: []coordination.SplitID{"a"}}); err != nil {
			t.Fatal(err)
		}
		leads := func(gen uint64) func() bool {
			return func() bool {
				en, ok, err := mem.Get(context.Background(), store.Ephemeral, protocol.KeyLeader)
				if err != nil || !ok {
					return false
				}
				l, err := protocol.DecodeLeader(protocol.KeyLeader, en.Value)
				return err == nil && l.Owner == "w1" && l.Generation == gen
			}
		}
		until(t, clk, "w1 leads generation 1", leads(1))

		fs.SilenceWatches()
		fs.FailReads(store.Ephemeral, "\xff") // every ephemeral listing fails; no Get does
		en, _, err := mem.Get(context.Background(), store.Ephemeral, protocol.KeyLeader)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := mem.Delete(context.Background(), store.Ephemeral, protocol.KeyLeader, en.Revision); err != nil || !ok {
			t.Fatalf("delete the leader key: %v %v", ok, err)
		}
		until(t, clk, "w1 leads generation 2", leads(2))
	})
}
