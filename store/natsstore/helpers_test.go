package natsstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/store"
)

// testLease is the lease TTL of every test store (the minimum).
const testLease = 2 * time.Second

// serverOptions returns the options of an embedded JetStream server on a
// loopback port with its store under dir.
func serverOptions(dir string) *server.Options {
	return &server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		JetStream: true,
		StoreDir:  dir,
		NoLog:     true,
		NoSigs:    true,
	}
}

// startServer runs an embedded JetStream server (loopback, random port,
// store in a temporary directory) and shuts it down at cleanup. mutate may
// adjust the options first.
func startServer(t testing.TB, mutate ...func(*server.Options)) *server.Server {
	t.Helper()
	opts := serverOptions(t.TempDir())
	for _, m := range mutate {
		m(opts)
	}
	return runServer(t, opts)
}

// runServer starts a server with opts and shuts it down at cleanup.
func runServer(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		t.Fatalf("server not ready for connections")
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// newStore builds a store for cfg with the test lease TTL, closed at
// cleanup. The reconnect timing is the one derived from the lease.
func newStore(t testing.TB, cfg Config) *Store {
	t.Helper()
	st, err := New(cfg, testLease)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// storeFor builds a store on the servers' client URLs for job "t".
func storeFor(t testing.TB, servers ...*server.Server) *Store {
	t.Helper()
	cfg := Config{Job: "t"}
	for _, s := range servers {
		cfg.Servers = append(cfg.Servers, s.ClientURL())
	}
	return newStore(t, cfg)
}

// opCtx returns a context bounded like one store operation.
func opCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond every 20ms until it holds or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wantKind fails unless err is a *coordination.Error of kind k whose text
// contains every fragment.
func wantKind(t testing.TB, err error, k coordination.ErrorKind, fragments ...string) {
	t.Helper()
	if got := coordination.KindOf(err); got != k {
		t.Fatalf("error kind = %v, want %v (err: %v)", got, k, err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Fatalf("error %q does not contain %q", err, f)
		}
	}
}

// nextEvent receives one event within timeout.
func nextEvent(t testing.TB, w store.Watcher, timeout time.Duration) store.WatchEvent {
	t.Helper()
	select {
	case ev, ok := <-w.Events():
		if !ok {
			t.Fatalf("watch ended early: %v", w.Err())
		}
		return ev
	case <-time.After(timeout):
		t.Fatalf("no watch event within %s", timeout)
	}
	return store.WatchEvent{}
}

// mustCreate creates key and returns its revision.
func mustCreate(t testing.TB, st store.Store, ks store.Keyspace, key, value string) store.Revision {
	t.Helper()
	rev, ok, err := st.Create(opCtx(t), ks, key, []byte(value))
	if err != nil || !ok {
		t.Fatalf("create %s: ok=%v err=%v", key, ok, err)
	}
	return rev
}

// isCtxErr reports whether err wraps a context error.
func isCtxErr(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// startWorker spawns a coordinator with cfg over st on its own engine,
// gives it a waker and starts it with p; it is aborted when the test ends.
func startWorker(t *testing.T, st *Store, cfg coordination.Config, p coordination.Planner) (*actors.Coordinator, *coordination.Waker) {
	t.Helper()
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	c, err := actors.Spawn(e, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Abort)
	w := coordination.NewWaker()
	c.SetWaker(w)
	if err := c.Start(p); err != nil {
		t.Fatal(err)
	}
	return c, w
}
