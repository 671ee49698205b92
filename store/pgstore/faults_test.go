package pgstore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/storetest"
)

// ownServer starts a server of the test's own, for tests that stop it.
func ownServer(t *testing.T) *pgtest.Server { return pgtest.StartT(t) }

func TestStatementTimeoutBoundsEveryCall(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	st := newStore(t, s, Config{}, testTTL)
	mustCreate(t, st, store.Durable, "k", "v")
	// Another session holds the job's write lock: a write waits for it no
	// longer than the statement timeout (LeaseTTL/2), even on a context
	// without a deadline.
	holdJobLock(t, st, st)
	start := time.Now()
	_, _, err := st.Update(context.Background(), store.Durable, "k", []byte("w"), 1)
	took := time.Since(start)
	wantKind(t, err, coordination.Retryable, "statement timeout")
	if took < testTTL/2 || took > testTTL/2+2*time.Second {
		t.Errorf("the blocked write returned after %s, want about %s", took, testTTL/2)
	}
}

func TestLostConnectionIsRetryableAndThePoolReconnects(t *testing.T) {
	t.Parallel()
	s := ownServer(t)
	st := newStore(t, s, Config{}, 2*time.Second)
	rev := mustCreate(t, st, store.Durable, "k", "v")
	s.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	_, _, err := st.Update(ctx, store.Durable, "k", []byte("w"), rev)
	wantKind(t, err, coordination.Retryable)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.Update(opCtx(t), store.Durable, "k", []byte("w"), rev); err != nil || !ok {
		t.Fatalf("Update after the restart = %v, %v", ok, err)
	}
}

// TestRestartLosesNoAcknowledgedWrite checks concurrent histories while
// the server is restarted (fast shutdown, then SIGKILL) in the middle of
// each: every acknowledged write is still there after it (the server runs
// with the default synchronous_commit = on), the pool reconnects, and the
// histories stay linearizable.
func TestRestartLosesNoAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"fast shutdown", "SIGKILL"} {
		t.Run(how, func(t *testing.T) {
			s := ownServer(t)
			st := newStore(t, s, Config{}, 2*time.Second)
			restarts := 0
			storetest.CheckLinearizable(t, st, 2, func() error {
				if how == "SIGKILL" {
					s.Kill()
				} else {
					s.Stop()
				}
				restarts++
				return s.Start()
			})
			t.Logf("%d restarts (%s)", restarts, how)
			acknowledged(t, s, st)
		})
	}
}

// acknowledged writes keys from several goroutines while the server is
// killed and restarted, and checks that every acknowledged one survived.
func acknowledged(t *testing.T, s *pgtest.Server, st *Store) {
	var mu sync.Mutex
	acked := map[string]store.Revision{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("ack.%d.%d", g, i)
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				rev, ok, err := st.Create(ctx, store.Durable, key, []byte(key))
				cancel()
				if err == nil && ok {
					mu.Lock()
					acked[key] = rev
					mu.Unlock()
				}
			}
		})
	}
	waitFor(t, 10*time.Second, "some acknowledged writes", func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) > 50 })
	s.Kill()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "writes after the restart", func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) > 100 })
	close(stop)
	wg.Wait()
	l, err := st.List(opCtx(t), store.Durable, "ack.")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]store.Revision{}
	for _, e := range l {
		have[e.Key] = e.Revision
	}
	for k, rev := range acked {
		if have[k] != rev {
			t.Errorf("acknowledged %s at rev %d, after the crash: rev %d", k, rev, have[k])
		}
	}
	t.Logf("%d acknowledged writes checked after a SIGKILL", len(acked))
}

func TestAsynchronousCommitIsWarnedAbout(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	var logs syncBuffer
	st := newStore(t, s, Config{DSN: s.DSN("postgres") + "&synchronous_commit=off", Logger: slog.New(slog.NewTextHandler(&logs, nil))}, testTTL)
	mustCreate(t, st, store.Durable, "k", "v")
	if !strings.Contains(logs.String(), "synchronous_commit is off") {
		t.Errorf("no warning about synchronous_commit = off; log:\n%s", logs.String())
	}
	var quiet syncBuffer
	mustCreate(t, newStore(t, s, Config{Logger: slog.New(slog.NewTextHandler(&quiet, nil))}, testTTL), store.Durable, "k", "v")
	if strings.Contains(quiet.String(), "synchronous_commit") {
		t.Errorf("a warning with synchronous_commit = on: %s", quiet.String())
	}
}

// syncBuffer is a strings.Builder safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestJobsWithCollidingHashesDoNotSerialise takes two jobs whose schema
// names collide under PostgreSQL's 32-bit hashtext (the lock key's hash
// before it was 64 bits): while one job's write lock is held, the other
// job writes at once.
func TestJobsWithCollidingHashesDoNotSerialise(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	a, b := "j107806", "j64097"
	var same bool
	if err := s.QueryRowOn(opCtx(t), "postgres", "SELECT hashtext('coordination_'||$1) = hashtext('coordination_'||$2)", []any{a, b}, &same); err != nil {
		t.Fatal(err)
	}
	if !same {
		// Another server's hashtext: find a colliding pair (about 5 are
		// expected among 300,000 names).
		q := `SELECT substr(x.n, 14), substr(y.n, 14) FROM (SELECT 'coordination_j'||i n, hashtext('coordination_j'||i) h FROM generate_series(1,300000) i) x
			JOIN (SELECT 'coordination_j'||i n, hashtext('coordination_j'||i) h FROM generate_series(1,300000) i) y ON x.h = y.h AND x.n < y.n LIMIT 1`
		if err := s.QueryRowOn(opCtx(t), "postgres", q, nil, &a, &b); err != nil {
			t.Skipf("no hashtext collision found: %v", err)
		}
	}
	sa := newStore(t, s, Config{Job: a}, testTTL)
	sb := newStore(t, s, Config{Job: b}, testTTL)
	mustCreate(t, sa, store.Durable, "k", "v")
	mustCreate(t, sb, store.Durable, "k", "v")
	holdJobLock(t, sa, sa)
	if _, ok, err := sb.Create(context.Background(), store.Durable, "k2", []byte("v")); err != nil || !ok {
		t.Fatalf("job %s's write while job %s's lock is held: %v, %v", b, a, ok, err)
	}
}
