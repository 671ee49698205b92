package pgstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
)

// TestTheREADMEGrantsSuffice sets up the roles of docs/postgres.md, "Running on
// PostgreSQL" with exactly its statements: a worker role that may create
// schemas in the database, and a read-only operator role that reads every
// job the worker creates; the worker runs a job, the operator reads it
// (List, Watch, the history, the lease) and may not write.
func TestTheREADMEGrantsSuffice(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	db := pgtest.UniqueName("grants")
	if err := s.CreateDatabase(opCtx(t), db); err != nil {
		t.Fatal(err)
	}
	worker, ops := db+"_worker", db+"_ops"
	for _, q := range []string{
		// The README's statements, with its role and database names replaced.
		fmt.Sprintf("CREATE ROLE %s LOGIN", worker),
		fmt.Sprintf("GRANT CONNECT, CREATE ON DATABASE %s TO %s", db, worker),
		fmt.Sprintf("CREATE ROLE %s LOGIN", ops),
		fmt.Sprintf("GRANT CONNECT ON DATABASE %s TO %s", db, ops),
		fmt.Sprintf("ALTER DEFAULT PRIVILEGES FOR ROLE %s GRANT USAGE ON SCHEMAS TO %s", worker, ops),
		fmt.Sprintf("ALTER DEFAULT PRIVILEGES FOR ROLE %s GRANT SELECT ON TABLES TO %s", worker, ops),
	} {
		if err := s.ExecOn(opCtx(t), db, q); err != nil {
			t.Fatal(err)
		}
	}
	dsn := func(role string) string {
		return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", role, s.Port(), db)
	}
	job := "granted"
	w := newStore(t, s, Config{DSN: dsn(worker), Job: job}, testTTL)
	mustCreate(t, w, store.Durable, "d", "v")
	mustCreate(t, w, store.Ephemeral, "e", "v")

	o := newStore(t, s, Config{DSN: dsn(ops), Job: job, ExistingOnly: true}, testTTL)
	if l, err := o.List(opCtx(t), store.Durable, ""); err != nil || len(l) != 1 {
		t.Fatalf("the operator's List = %v, %v", l, err)
	}
	if ttl, err := JobLeaseTTL(opCtx(t), Config{DSN: dsn(ops), Job: job, ExistingOnly: true}); err != nil || ttl != testTTL {
		t.Fatalf("the operator's JobLeaseTTL = %v, %v", ttl, err)
	}
	for _, watch := range []func() (store.Watcher, error){
		func() (store.Watcher, error) { return o.Watch(opCtx(t), store.Durable, "") },
		func() (store.Watcher, error) { return o.WatchHistory(opCtx(t), store.Durable, "") },
	} {
		wt, err := watch()
		if err != nil {
			t.Fatalf("the operator's watch: %v", err)
		}
		for ev := nextEvent(t, wt, 5*time.Second); ev.Kind != store.SnapshotDone; ev = nextEvent(t, wt, 5*time.Second) {
		}
		wt.Stop()
	}
	_, _, err := o.Create(opCtx(t), store.Durable, "x", nil)
	wantKind(t, err, coordination.Fatal, "privilege", "Running on PostgreSQL")
	if err := o.DeleteJob(opCtx(t)); coordination.KindOf(err) != coordination.Fatal {
		t.Errorf("the operator's DeleteJob = %v, want Fatal (only the owner may drop the schema)", err)
	}
	if err := w.DeleteJob(opCtx(t)); err != nil {
		t.Errorf("the worker's DeleteJob: %v", err)
	}
}
