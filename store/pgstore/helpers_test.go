package pgstore

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
)

// testTTL is the lease TTL of the package's own tests: short, so that
// expiries and sweeps happen within a second.
const testTTL = time.Second

// newStore opens a store on server s with cfg (DSN and Job filled in when
// empty) and closes it when t ends.
func newStore(t testing.TB, s *pgtest.Server, cfg Config, ttl time.Duration) *Store {
	t.Helper()
	if cfg.DSN == "" && cfg.Pool == nil {
		cfg.DSN = s.DSN("postgres")
	}
	if cfg.Job == "" {
		cfg.Job = pgtest.UniqueName("t")
	}
	st, err := New(cfg, ttl)
	if err != nil {
		t.Fatalf("New(%v): %v", cfg, err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// opCtx bounds one operation of a test.
func opCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond every 10ms until it holds, failing t after timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond) // polling an explicit condition
	}
}

// wantKind fails t unless err is a *coordination.Error of kind k whose
// text holds every fragment.
func wantKind(t testing.TB, err error, k coordination.ErrorKind, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", k)
	}
	if got := coordination.KindOf(err); got != k {
		t.Fatalf("error kind %v, want %v: %v", got, k, err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not mention %q", err, f)
		}
	}
}

// mustCreate creates key and returns its revision.
func mustCreate(t testing.TB, st store.Store, ks store.Keyspace, key, value string) store.Revision {
	t.Helper()
	rev, ok, err := st.Create(opCtx(t), ks, key, []byte(value))
	if err != nil || !ok {
		t.Fatalf("Create(%s, %q) = %d, %v, %v", ks, key, rev, ok, err)
	}
	return rev
}

// nextEvent returns the watch's next event, failing t after timeout or
// when the watch ends.
func nextEvent(t testing.TB, w store.Watcher, timeout time.Duration) store.WatchEvent {
	t.Helper()
	select {
	case ev, ok := <-w.Events():
		if !ok {
			t.Fatalf("watch ended: %v", w.Err())
		}
		return ev
	case <-time.After(timeout):
		t.Fatalf("no watch event within %s", timeout)
	}
	return store.WatchEvent{}
}

// endOf waits for the watch to end and returns its Err.
func endOf(t testing.TB, w store.Watcher, timeout time.Duration) error {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case _, ok := <-w.Events():
			if !ok {
				return w.Err()
			}
		case <-deadline:
			t.Fatalf("the watch did not end within %s", timeout)
		}
	}
}

// exec runs sql as the superuser on the test database.
func exec(t testing.TB, s *pgtest.Server, sql string, args ...any) {
	t.Helper()
	if err := s.Exec(opCtx(t), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// count returns the result of a counting query on the store's pool.
func count(t testing.TB, st *Store, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := st.pool.QueryRow(opCtx(t), st.sc.sql(sql), args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// holdJobLock takes st's job write lock on a connection of from's pool (a
// session other than the writes under test when from is another handle)
// until t ends, and returns that connection.
func holdJobLock(t *testing.T, st, from *Store) *pgxpool.Conn {
	t.Helper()
	conn, err := from.pool.Acquire(opCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	if _, err := conn.Exec(opCtx(t), st.sc.sql("SELECT pg_advisory_lock({lock})")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Exec(context.Background(), st.sc.sql("SELECT pg_advisory_unlock({lock})")) }) //nolint:errcheck
	return conn
}

// blockedCatchUp is a watch whose catch-up is in flight: blocked on a lock
// of the job's change log until release.
type blockedCatchUp struct {
	st      *Store
	w       store.Watcher
	closed  atomic.Int32 // connections the store's pool closed
	release func()       // lets the catch-up run
}

// newBlockedCatchUp opens a store with lease TTL ttl on a pool of the
// test's that counts the connections it closes (and sets no statement
// timeout), watches the durable keys with ctx, and leaves a
// catch-up of that watch in flight (woken by a notification, waiting for
// a lock the test holds on the change log).
func newBlockedCatchUp(t *testing.T, s *pgtest.Server, ctx context.Context, ttl time.Duration) *blockedCatchUp {
	t.Helper()
	b := &blockedCatchUp{}
	pcfg, err := pgxpool.ParseConfig(s.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	pcfg.BeforeClose = func(*pgx.Conn) { b.closed.Add(1) }
	pool, err := pgxpool.NewWithConfig(opCtx(t), pcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // after the store's Close: cleanups run last first
	b.st = newStore(t, s, Config{Pool: pool}, ttl)
	mustCreate(t, b.st, store.Durable, "k", "v") // creates the schema
	if b.w, err = b.st.Watch(ctx, store.Durable, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.w.Stop)
	nextEvent(t, b.w, 5*time.Second) // k
	nextEvent(t, b.w, 5*time.Second) // SnapshotDone
	b.release = holdInTx(t, s, b.st.sc.sql("LOCK TABLE {s}.changes IN ACCESS EXCLUSIVE MODE"))
	exec(t, s, "SELECT pg_notify($1, '0')", b.st.sc.name)
	waitFor(t, 10*time.Second, "the watch's catch-up to wait for the lock", func() bool {
		var n int64
		err := pool.QueryRow(opCtx(t), "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND strpos(query, $1) > 0",
			b.st.sc.ident+".changes c), m.pruned_upto").Scan(&n)
		return err == nil && n == 1
	})
	return b
}

// holdInTx runs query (a lock) in a transaction of a connection of its
// own and returns the function that commits it, releasing what query took;
// the test's cleanup calls it too.
func holdInTx(t *testing.T, s *pgtest.Server, query string) (release func()) {
	t.Helper()
	locker, err := pgx.Connect(opCtx(t), s.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = locker.Close(context.Background()) })
	tx, err := locker.Begin(opCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	release = func() { _ = tx.Commit(context.Background()) }
	t.Cleanup(release)
	if _, err := tx.Exec(opCtx(t), query); err != nil {
		t.Fatal(err)
	}
	return release
}
