package natsstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination/store"
)

// TestReplicatedBucketsOpen opens fresh R3 jobs from four stores at once,
// as the workers of a new job do, and adopts an R3 bucket created by
// jetstream.CreateKeyValue (direct gets on), on one 3-node cluster.
func TestReplicatedBucketsOpen(t *testing.T) {
	t.Parallel() // waits in real time
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	servers, _ := startCluster(t, 3)
	cfg := Config{Replicas: 3}
	for _, s := range servers {
		cfg.Servers = append(cfg.Servers, s.ClientURL())
	}

	// Each of 4 concurrent openers must finish its first Watch and Get well
	// inside one OpTimeout (10 s by default): before the fix, the stores
	// whose create found the stream already proposed sent their first
	// requests to a stream with no leader yet and waited them out.
	t.Run("ConcurrentOpenersOfANewJob", func(t *testing.T) {
		const openers, bound = 4, 3 * time.Second
		for round := range 3 {
			c := cfg
			c.Job = fmt.Sprintf("fresh%d", round)
			var wg sync.WaitGroup
			took := make([]time.Duration, openers)
			errs := make([]error, openers)
			start := time.Now()
			for i := range openers {
				wg.Go(func() {
					took[i], errs[i] = firstWatchAndGet(t, newStore(t, c), start)
				})
			}
			wg.Wait()
			t.Logf("round %d: %v", round, took)
			for i := range openers {
				if errs[i] != nil {
					t.Errorf("round %d, opener %d: %v", round, i, errs[i])
				} else if took[i] > bound {
					t.Errorf("round %d, opener %d took %s, want at most %s", round, i, took[i], bound)
				}
			}
			wantLeaderReads(t, servers[0], c.Job)
		}
	})

	// A tool's store (ExistingOnly, coordctl status and audit) must read
	// such a bucket without updating its stream: a read-only operator has
	// no permission to.
	t.Run("InspectedWithoutAStreamUpdate", func(t *testing.T) {
		c := cfg
		c.Job, c.ExistingOnly = "inspected", true
		js := jsFor(t, servers[1])
		for _, kc := range []jetstream.KeyValueConfig{
			{Bucket: "coordination_inspected_state", History: 1, MaxValueSize: bucketMaxMsgSize, Replicas: 3},
			{Bucket: "coordination_inspected_lease", History: 1, MaxValueSize: bucketMaxMsgSize, Replicas: 3, TTL: testLease, LimitMarkerTTL: testLease},
		} {
			kv, err := js.CreateKeyValue(opCtx(t), kc)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kv.Put(opCtx(t), "k", []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		st := newStore(t, c)
		if _, live, err := st.Get(opCtx(t), store.Durable, "k"); err != nil || !live {
			t.Fatalf("get: live=%v err=%v", live, err)
		}
		if entries, err := st.List(opCtx(t), store.Durable, ""); err != nil || len(entries) != 1 {
			t.Fatalf("list: %v %v", entries, err)
		}
		for _, b := range []string{"KV_coordination_inspected_state", "KV_coordination_inspected_lease"} {
			stream, err := js.Stream(opCtx(t), b)
			if err != nil {
				t.Fatal(err)
			}
			if !stream.CachedInfo().Config.AllowDirect {
				t.Fatalf("stream %s: a store with ExistingOnly turned direct gets off (a stream update)", b)
			}
		}
	})

	t.Run("AdoptedWithDirectGets", func(t *testing.T) {
		c := cfg
		c.Job = "adopted"
		js := jsFor(t, servers[1])
		if _, err := js.CreateKeyValue(opCtx(t), jetstream.KeyValueConfig{Bucket: "coordination_adopted_state", History: 1, MaxValueSize: bucketMaxMsgSize, Replicas: 3}); err != nil {
			t.Fatal(err)
		}
		st := newStore(t, c)
		mustCreate(t, st, store.Durable, "k", "v")
		if _, live, err := st.Get(opCtx(t), store.Durable, "k"); err != nil || !live {
			t.Fatalf("get: live=%v err=%v", live, err)
		}
		wantLeaderReads(t, servers[0], c.Job)
		if st.conn.state.stream.CachedInfo().Config.AllowDirect {
			t.Fatal("the store reads the adopted bucket's stream with the direct-get info it had before turning them off")
		}
	})
}

// firstWatchAndGet watches the durable keyspace to the end of its snapshot
// and then reads a lease key, as a worker starts, and returns the time
// since start.
func firstWatchAndGet(t *testing.T, st *Store, start time.Time) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	w, err := st.Watch(ctx, store.Durable, "")
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	for ev := range w.Events() {
		if ev.Kind == store.SnapshotDone {
			break
		}
	}
	if err := w.Err(); err != nil {
		return 0, err
	}
	if _, _, err := st.Get(ctx, store.Ephemeral, "k"); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// wantLeaderReads fails unless both buckets of job have 3 replicas and
// direct gets off.
func wantLeaderReads(t *testing.T, srv *server.Server, job string) {
	t.Helper()
	js := jsFor(t, srv)
	for _, b := range []string{"KV_coordination_" + job + "_state", "KV_coordination_" + job + "_lease"} {
		stream, err := js.Stream(opCtx(t), b)
		if err != nil {
			t.Fatal(err)
		}
		if c := stream.CachedInfo().Config; c.Replicas != 3 || c.AllowDirect {
			t.Fatalf("stream %s: replicas %d, direct gets %v; want 3 replicas read from the leader", b, c.Replicas, c.AllowDirect)
		}
	}
}
