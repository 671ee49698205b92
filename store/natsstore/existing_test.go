package natsstore

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

func TestJobLeaseTTLReadsTheLeaseBucket(t *testing.T) {
	srv := startServer(t)
	cfg := Config{Servers: []string{tokenURL(srv)}, Job: "leased"}
	srv.Shutdown() // first: a server that is down is Retryable, naming no secret
	_, err := JobLeaseTTL(opCtx(t), cfg)
	wantKind(t, err, coordination.Retryable, "connecting to nats://<redacted>@")
	noToken(t, "the JobLeaseTTL error", err.Error())

	srv = startServer(t)
	cfg.Servers = []string{srv.ClientURL()}
	_, err = JobLeaseTTL(opCtx(t), cfg)
	wantKind(t, err, coordination.Fatal, "bucket coordination_leased_lease does not exist")
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("the missing-job error %v does not wrap jetstream.ErrBucketNotFound", err)
	}
	st, err := New(cfg, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mustCreate(t, st, store.Ephemeral, "k", "v")
	if ttl, err := JobLeaseTTL(opCtx(t), cfg); err != nil || ttl != 3*time.Second {
		t.Fatalf("JobLeaseTTL = %s, %v; want the job's 3s", ttl, err)
	}
	if names := bucketNames(t, jsFor(t, srv)); len(names) != 2 {
		t.Fatalf("buckets after JobLeaseTTL: %v, want the job's two", names)
	}
}

// bucketNames lists the server's key-value buckets.
func bucketNames(t testing.TB, js jetstream.JetStream) []string {
	t.Helper()
	var names []string
	l := js.KeyValueStoreNames(opCtx(t))
	for n := range l.Name() {
		names = append(names, n)
	}
	if err := l.Error(); err != nil {
		t.Fatal(err)
	}
	return names
}

// TestExistingOnlyFinishesAHalfDeletedJob deletes one bucket of a job by
// hand, as an interrupted cleanup leaves it: a store with ExistingOnly
// still connects, fails the operations on the missing bucket naming it,
// serves the other and deletes what remains.
func TestExistingOnlyFinishesAHalfDeletedJob(t *testing.T) {
	for _, gone := range []store.Keyspace{store.Durable, store.Ephemeral} {
		t.Run(map[store.Keyspace]string{store.Durable: "state gone", store.Ephemeral: "lease gone"}[gone], func(t *testing.T) {
			srv := startServer(t)
			cfg := Config{Servers: []string{srv.ClientURL()}, Job: "half"}
			rw := newStore(t, cfg)
			mustCreate(t, rw, store.Durable, "k", "v")
			mustCreate(t, rw, store.Ephemeral, "k", "v")
			js := jsFor(t, srv)
			bucket, kept := "coordination_half_state", store.Ephemeral
			if gone == store.Ephemeral {
				bucket, kept = "coordination_half_lease", store.Durable
			}
			if err := js.DeleteKeyValue(opCtx(t), bucket); err != nil {
				t.Fatal(err)
			}

			cfg.ExistingOnly = true
			ro := newStore(t, cfg)
			_, _, err := ro.Get(opCtx(t), gone, "k")
			wantKind(t, err, coordination.Fatal, "bucket "+bucket+" does not exist", `job "half" is half deleted`, "coordctl delete-job")
			if !errors.Is(err, jetstream.ErrBucketNotFound) {
				t.Fatalf("the error %v does not wrap jetstream.ErrBucketNotFound", err)
			}
			if _, err := ro.List(opCtx(t), gone, ""); coordination.KindOf(err) != coordination.Fatal {
				t.Fatalf("List of the missing bucket = %v, want the same Fatal", err)
			}
			if e, ok, err := ro.Get(opCtx(t), kept, "k"); err != nil || !ok || string(e.Value) != "v" {
				t.Fatalf("Get of the remaining bucket = %+v %v %v, want v", e, ok, err)
			}
			if err := ro.DeleteJob(opCtx(t)); err != nil {
				t.Fatalf("DeleteJob of the half-deleted job: %v", err)
			}
			if names := bucketNames(t, js); len(names) != 0 {
				t.Fatalf("buckets left after DeleteJob: %v", names)
			}
		})
	}
}
