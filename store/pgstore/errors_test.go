package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
)

// TestWrongStatementsOfTheStoreAreFatal gives a store statements that do
// not fit what it scans or the job's schema, as a bug of the store (or a
// schema changed outside the library) would: each operation fails Fatal
// once, saying it is not retried and keeping the driver's error as the
// cause, instead of Retryable, which a coordinator retries for ever (a
// Scan of 2 of 3 columns made every exactly-once commit retry silently).
func TestWrongStatementsOfTheStoreAreFatal(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	for _, tt := range []struct {
		name   string
		broken func(q *queries, sc schema)
		op     func(ctx context.Context, st *Store) error
		want   string
	}{
		{
			"a Scan of more columns than the statement returns",
			func(q *queries, sc schema) {
				q.get = sc.sql("SELECT e.value, e.revision FROM {s}.entries e WHERE e.keyspace = $1 AND e.key = $2")
			},
			func(ctx context.Context, st *Store) error { _, _, err := st.Get(ctx, store.Durable, "k"); return err },
			"number of field descriptions must equal number of destinations",
		},
		{
			"a Scan of a column into the wrong type",
			func(q *queries, sc schema) {
				q.get = sc.sql("SELECT e.value, octet_length(e.value), e.key FROM {s}.entries e WHERE e.keyspace = $1 AND e.key = $2")
			},
			func(ctx context.Context, st *Store) error { _, _, err := st.Get(ctx, store.Durable, "k"); return err },
			"can't scan into dest[2]",
		},
		{
			"a listing of too few columns",
			func(q *queries, sc schema) {
				q.list = sc.sql("SELECT e.key, e.revision FROM {s}.entries e WHERE e.keyspace = $1 AND $2::text IS NOT NULL AND ($3::text IS NULL OR true)")
			},
			func(ctx context.Context, st *Store) error { _, err := st.List(ctx, store.Durable, ""); return err },
			"List of durable keys",
		},
		{
			"an undefined column",
			func(q *queries, sc schema) {
				q.get = sc.sql("SELECT e.value, e.size, e.revision FROM {s}.entries e WHERE e.keyspace = $1 AND e.key = $2")
			},
			func(ctx context.Context, st *Store) error { _, _, err := st.Get(ctx, store.Durable, "k"); return err },
			"SQLSTATE 42703",
		},
		{
			"a syntax error",
			func(q *queries, sc schema) { q.create = "SELEC $1, $2, $3, $4" },
			func(ctx context.Context, st *Store) error {
				_, _, err := st.Create(ctx, store.Durable, "k2", []byte("v"))
				return err
			},
			"SQLSTATE 42601",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := newStore(t, s, Config{}, testTTL)
			mustCreate(t, st, store.Durable, "k", "v")
			tt.broken(&st.q, st.sc)
			err := tt.op(opCtx(t), st)
			wantKind(t, err, coordination.Fatal, tt.want, "not retried", st.cfg.Job)
			if strings.Contains(err.Error(), "may have landed") {
				t.Errorf("a refused statement says a write may have landed: %v", err)
			}
			var cerr *coordination.Error
			if !errors.As(err, &cerr) || cerr.Err == nil {
				t.Errorf("the driver's error is not kept as the cause: %#v", err)
			}
		})
	}
}

// TestRefusedConnectionWroteNothing points a store at a port nothing
// listens on: the operation fails at once, Retryable, saying that nothing
// was written and what to check, never that a write may have landed.
func TestRefusedConnectionWroteNothing(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // refused from now on
	st := newStore(t, nil, Config{DSN: "postgres://svc:hunter2@" + addr + "/db?sslmode=disable"}, 3*time.Second)
	_, _, err = st.Create(opCtx(t), store.Durable, "k", []byte("v"))
	wantKind(t, err, coordination.Retryable, "connection refused", "nothing was written", "check that the server runs", "connect timeout, 1s")
	if strings.Contains(err.Error(), "may have landed") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("a refused connection says a write may have landed, or shows the password: %v", err)
	}
}

// TestServerStartingUpWroteNothing points a store at a server that answers
// every connection with "the database system is starting up" (57P03), as
// one recovering after a crash does: Retryable, saying nothing was
// written.
func TestServerStartingUpWroteNothing(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b := pgproto3.NewBackend(c, c)
			if _, err := b.ReceiveStartupMessage(); err == nil {
				b.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "57P03", Message: "the database system is starting up"})
				_ = b.Flush()
			}
			_ = c.Close()
		}
	}()
	st := newStore(t, nil, Config{DSN: "postgres://svc@" + ln.Addr().String() + "/db?sslmode=disable"}, 3*time.Second)
	_, _, err = st.Create(opCtx(t), store.Durable, "k", []byte("v"))
	wantKind(t, err, coordination.Retryable, "SQLSTATE 57P03", "nothing was written")
}

// TestSilentServerFailsWithinTheConnectTimeout points a store at a port
// that accepts connections and never answers, as a server behind a dead
// link or a full backlog would: an operation on a context without a
// deadline fails within the connect timeout (a sixth of the lease, at
// least 1s: 1s here), Retryable, saying nothing was written; a DSN's connect_timeout
// replaces the default.
func TestSilentServerFailsWithinTheConnectTimeout(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var held []net.Conn // accepted, never answered
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	for _, tt := range []struct {
		name   string
		params string
		want   time.Duration
	}{
		{"the default, a sixth of the lease, at least 1s", "", time.Second},
		{"the DSN's connect_timeout", "&connect_timeout=2", 2 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := newStore(t, nil, Config{DSN: "postgres://svc@" + ln.Addr().String() + "/db?sslmode=disable" + tt.params}, 3*time.Second)
			start := time.Now()
			_, _, err := st.Get(context.Background(), store.Durable, "k")
			took := time.Since(start)
			wantKind(t, err, coordination.Retryable, "nothing was written", fmt.Sprintf("connect timeout, %s", tt.want))
			if took < tt.want || took > tt.want+time.Second {
				t.Errorf("the operation failed after %s, want about %s", took, tt.want)
			}
		})
	}
}

// TestDefaultConnectTimeoutIsBelowTheDefaultOpTimeout checks the connect
// timeout a store uses when its DSN sets none.
func TestDefaultConnectTimeoutIsBelowTheDefaultOpTimeout(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ lease, want time.Duration }{
		{MinLeaseTTL, time.Second},
		{3 * time.Second, time.Second},
		{12 * time.Second, 2 * time.Second},
		{coordination.DefaultConfig().LeaseDuration, 5 * time.Second},
		{10 * time.Minute, 5 * time.Second},
	} {
		if got := defaultConnectTimeout(tt.lease); got != tt.want {
			t.Errorf("defaultConnectTimeout(%s) = %s, want %s", tt.lease, got, tt.want)
		}
	}
	// Below OpTimeout, so that an operation on a silent server fails with
	// the connection's error (nothing was written), not its own deadline.
	def := coordination.DefaultConfig()
	if got := defaultConnectTimeout(def.LeaseDuration); got >= def.OpTimeout {
		t.Errorf("the default connect timeout %s is not below the default OpTimeout %s", got, def.OpTimeout)
	}
}

// TestConnectionLostDuringAWriteMayHaveLanded cuts the connection of an
// Update waiting for the job's lock (held by another session): the error
// is Retryable and says the write may have landed, since the statement was
// sent.
func TestConnectionLostDuringAWriteMayHaveLanded(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	p := newCutProxy(t, fmt.Sprintf("127.0.0.1:%d", s.Port()))
	st := newStore(t, s, Config{DSN: fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", p.addr())}, 10*time.Second)
	rev := mustCreate(t, st, store.Durable, "k", "v")
	lock := newStore(t, s, Config{Job: st.cfg.Job}, 10*time.Second)
	conn := holdJobLock(t, st, lock)
	done := make(chan error, 1)
	go func() {
		_, _, err := st.Update(opCtx(t), store.Durable, "k", []byte("w"), rev)
		done <- err
	}()
	waitFor(t, 5*time.Second, "the Update to wait for the job's lock", func() bool {
		var n int
		err := conn.QueryRow(opCtx(t), "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND NOT l.granted AND a.application_name = $1",
			"spate-coordination "+st.cfg.Job).Scan(&n)
		return err == nil && n > 0
	})
	p.cut()
	err := <-done
	wantKind(t, err, coordination.Retryable, "the connection failed or timed out during the statement", "a write may have landed")
	if strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("a connection lost mid-statement says nothing was written: %v", err)
	}
}

// TestConnFailureTellsWhatMayHaveLanded checks the rule behind the three
// tests above on the driver's own error values.
func TestConnFailureTellsWhatMayHaveLanded(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		err  error
		want string // "" means not a connection failure
	}{
		{"a connection never made", &pgconn.ConnectError{}, "nothing was written"},
		{"a statement never sent", fmt.Errorf("acquire: %w", safeToRetry{}), "nothing was written"},
		{"EOF mid-statement", fmt.Errorf("failed to receive message: %w", io.ErrUnexpectedEOF), "a write may have landed"},
		{"a network error", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, "a write may have landed"},
		{"a Scan mismatch", errors.New("number of field descriptions must equal number of destinations, got 3 and 2"), ""},
		{"a closed pool", errors.New("closed pool"), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			note, ok := connFailure(tt.err)
			if ok != (tt.want != "") || !strings.Contains(note, tt.want) {
				t.Fatalf("connFailure(%v) = %q, %v; want %q", tt.err, note, ok, tt.want)
			}
		})
	}
}

// safeToRetry is an error the driver raised before sending anything.
type safeToRetry struct{}

func (safeToRetry) Error() string     { return "conn busy" }
func (safeToRetry) SafeToRetry() bool { return true }

// cutProxy forwards TCP connections to a server until cut closes them all.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

// newCutProxy starts a proxy to target, closed when t ends.
func newCutProxy(t testing.TB, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	go p.serve(target)
	t.Cleanup(func() {
		_ = ln.Close()
		p.cut()
	})
	return p
}

// addr returns the proxy's address.
func (p *cutProxy) addr() string { return p.ln.Addr().String() }

// serve accepts connections and pipes each to target until the listener
// closes.
func (p *cutProxy) serve(target string) {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(u, c); _ = u.Close() }()
		go func() { _, _ = io.Copy(c, u); _ = c.Close() }()
	}
}

// cut closes every connection the proxy has made.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}
