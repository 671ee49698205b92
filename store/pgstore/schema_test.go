package pgstore

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
)

func TestConcurrentStartsCreateTheSchemaOnce(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	job := pgtest.UniqueName("starts")
	const handles = 8
	// A long lease: the eight first writes queue on the job's lock, and on
	// a loaded machine the last may wait longer than a short lease's
	// statement timeout (a Retryable error, which this test is not about).
	const lease = 20 * time.Second
	revs := make(chan store.Revision, handles)
	var wg sync.WaitGroup
	for i := range handles {
		st := newStore(t, s, Config{Job: job}, lease)
		wg.Go(func() {
			rev, ok, err := st.Create(opCtx(t), store.Durable, fmt.Sprintf("k%d", i), []byte("v"))
			if err != nil || !ok {
				t.Errorf("handle %d: Create = %v, %v", i, ok, err)
			}
			revs <- rev
		})
	}
	wg.Wait()
	close(revs)
	seen := map[store.Revision]bool{}
	for r := range revs {
		if seen[r] {
			t.Errorf("revision %d handed out twice", r)
		}
		seen[r] = true
	}
	st := newStore(t, s, Config{Job: job}, lease)
	if n := count(t, st, "SELECT count(*) FROM {s}.entries"); n != handles {
		t.Errorf("%d entries, want %d", n, handles)
	}
}

func TestJobLeaseTTLIsFixed(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	job := pgtest.UniqueName("ttl")
	mustCreate(t, newStore(t, s, Config{Job: job}, testTTL), store.Durable, "k", "v")
	other := newStore(t, s, Config{Job: job}, 2*testTTL)
	_, _, err := other.Create(opCtx(t), store.Durable, "k2", nil)
	wantKind(t, err, coordination.Fatal, "lease TTL of 1s", "2s")
	ttl, err := JobLeaseTTL(opCtx(t), Config{DSN: s.DSN("postgres"), Job: job, ExistingOnly: true})
	if err != nil || ttl != testTTL {
		t.Errorf("JobLeaseTTL = %v, %v; want %v", ttl, err, testTTL)
	}
}

func TestExistingOnlyNeverCreatesTheSchema(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	job := pgtest.UniqueName("missing")
	st := newStore(t, s, Config{Job: job, ExistingOnly: true}, testTTL)
	_, err := st.List(opCtx(t), store.Durable, "")
	wantKind(t, err, coordination.Fatal, job, "coordination_"+job)
	_, err = JobLeaseTTL(opCtx(t), Config{DSN: s.DSN("postgres"), Job: job, ExistingOnly: true})
	wantKind(t, err, coordination.Fatal, "does not exist: no schema")
	if n := count(t, newStore(t, s, Config{Job: "probe"}, testTTL), "SELECT count(*) FROM pg_namespace WHERE nspname = $1", "coordination_"+job); n != 0 {
		t.Errorf("schema coordination_%s exists after ExistingOnly use", job)
	}
}

func TestDeleteJobDropsTheSchema(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	job := pgtest.UniqueName("del")
	st := newStore(t, s, Config{Job: job}, testTTL)
	mustCreate(t, st, store.Durable, "k", "v")
	if err := st.DeleteJob(opCtx(t)); err != nil {
		t.Fatal(err)
	}
	_, err := newStore(t, s, Config{Job: job, ExistingOnly: true}, testTTL).List(opCtx(t), store.Durable, "")
	wantKind(t, err, coordination.Fatal, "does not exist: no schema")
	// The handle that deleted it creates it afresh on its next write.
	if _, ok, err := st.Get(opCtx(t), store.Durable, "k"); ok || err != nil {
		t.Errorf("Get after DeleteJob = %v, %v; want absent", ok, err)
	}
}
