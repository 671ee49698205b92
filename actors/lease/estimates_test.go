package lease

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// writeCounter is a memstore that counts the writes of every key.
type writeCounter struct {
	*memstore.Store
	writes atomic.Int32
}

func (s *writeCounter) Create(ctx context.Context, ks store.Keyspace, key string, v []byte) (store.Revision, bool, error) {
	s.writes.Add(1)
	return s.Store.Create(ctx, ks, key, v)
}

func (s *writeCounter) Update(ctx context.Context, ks store.Keyspace, key string, v []byte, rev store.Revision) (store.Revision, bool, error) {
	s.writes.Add(1)
	return s.Store.Update(ctx, ks, key, v, rev)
}

// The presence renewal carries the largest estimates of held tenancies, at
// most four, each at least MinCutWeight, the largest first
// (docs/protocol.md, "Runtime split"); one reported 0 (by the handle, or
// by the root as the tenancy ends) is dropped, and the estimates cost no
// write of their own: one presence write per heartbeat, as without them.
// Which estimates are of held tenancies is the root's to filter
// (TestReportRemainingRidesOnThePresence).
func TestThePresenceRenewalCarriesTheLargestEstimates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, clk := workertest.NewEngine(t)
		mem := memstore.New(1500*time.Millisecond, memstore.WithClock(clk))
		st := &writeCounter{Store: mem}
		cfg := workertest.Config(t, clk, "w1")
		cfg.MinCutWeight = 10
		const nonce = "n1"
		v, _, _ := spawnLoneLease(t, e, st, cfg, nonce)
		synctest.Wait()
		start := st.writes.Load()
		pid := v.PIDs.Lease
		for _, r := range []worker.RemainingReported{ // as the root passes them on
			{Split: "a", Epoch: 3, Remaining: 100},
			{Split: "b", Epoch: 3, Remaining: 50},
			{Split: "c", Epoch: 3, Remaining: 900},
			{Split: "d", Epoch: 3, Remaining: 9}, // below MinCutWeight
			{Split: "e", Epoch: 3, Remaining: 300},
			{Split: "h", Epoch: 1, Remaining: 6000}, // ended below
			{Split: "x", Epoch: 4, Remaining: 8000}, // withdrawn below
			{Split: "x", Epoch: 4, Remaining: 0},
			{Split: "h", Epoch: 1}, // the root's, as the tenancy ends
		} {
			e.Send(pid, r)
		}
		want := []protocol.Estimate{{Split: "c", Epoch: 3, Remaining: 900}, {Split: "e", Epoch: 3, Remaining: 300},
			{Split: "a", Epoch: 3, Remaining: 100}, {Split: "b", Epoch: 3, Remaining: 50}}
		var at time.Duration
		for round := uint64(1); round <= 3; round++ {
			at += heartbeatInterval(cfg.LeaseDuration, "w1", nonce, round)
			clk.Add(heartbeatInterval(cfg.LeaseDuration, "w1", nonce, round))
			synctest.Wait()
			got := readPresence(t, mem)
			if got.Nonce != nonce || !slices.Equal(got.Remaining, want) {
				t.Fatalf("after heartbeat %d: presence %+v, want remaining %v", round, got, want)
			}
			if n := st.writes.Load() - start; n != int32(round) {
				t.Fatalf("%d writes in %d heartbeats (%s), want one presence write per heartbeat", n, round, at)
			}
		}
		// Estimates of ended tenancies go with them.
		for _, id := range []coordination.SplitID{"a", "b", "c", "d", "e"} {
			e.Send(pid, worker.RemainingReported{Split: id, Epoch: 3}) // the root's, as each ends
		}
		clk.Add(heartbeatInterval(cfg.LeaseDuration, "w1", nonce, 4))
		synctest.Wait()
		if got := readPresence(t, mem); got.Remaining != nil {
			t.Fatalf("presence %+v after every estimated tenancy ended, want no remaining", got)
		}
	})
}

func readPresence(t *testing.T, st store.Store) protocol.PresenceRecord {
	t.Helper()
	en, ok, err := st.Get(context.Background(), store.Ephemeral, protocol.WorkerKey("w1"))
	if err != nil || !ok {
		t.Fatalf("presence key: found %v, err %v", ok, err)
	}
	p, err := protocol.DecodePresence(protocol.WorkerKey("w1"), en.Value)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// No estimate is carried while cuts are off (a negative CutInterval): the
// leader would never ask.
func TestNoEstimatesWhileCutsAreOff(t *testing.T) {
	e := newEstimates()
	e.report(worker.RemainingReported{Split: "a", Epoch: 1, Remaining: 50})
	if got := e.largest(1, false); got != nil {
		t.Fatalf("largest with cuts off = %v, want nil", got)
	}
	if got := e.largest(0, true); len(got) != 1 || got[0].Remaining != 50 {
		t.Fatalf("largest with MinCutWeight 0 = %v, want the one estimate", got)
	}
	if got := e.largest(51, true); got != nil {
		t.Fatalf("largest with MinCutWeight 51 = %v, want nil", got)
	}
}
