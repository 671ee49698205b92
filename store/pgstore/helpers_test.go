package pgstore

import (
	"context"
	"strings"
	"testing"
	"time"

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
