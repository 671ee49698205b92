package pgstore

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// maxValueSize is the value cap of both keyspaces: 512 KiB, natsstore's, so
// that a job's records fit either production store. The change log keeps a
// copy of every value written within the retention, so the cap also bounds
// what one write adds to it.
const maxValueSize = 512 << 10

// Store is a [store.Store] on one PostgreSQL schema per job. It is safe for
// concurrent use. Create one with [New]; it connects on its first
// operation.
type Store struct {
	cfg      Config
	leaseTTL time.Duration
	sc       schema
	q        queries
	log      *slog.Logger
	pool     *pgxpool.Pool
	ownsPool bool

	// life is cancelled by Close once the statements in flight of the
	// sweeper and the watches returned (or endGrace passed); it ends the
	// listener and bounds those statements.
	life   context.Context
	cancel context.CancelFunc
	// done is closed by Close first; watches end (Err nil) and the sweeper
	// stops at their next wait.
	done chan struct{}
	// wg counts the listener, sweeper and watch goroutines; Close waits.
	wg sync.WaitGroup
	// busy counts the sweeper and watch goroutines (goBusy), whose
	// statements in flight Close lets finish.
	busy sync.WaitGroup

	hub *hub

	mu       sync.Mutex
	closed   bool
	ready    bool      // the schema is known to exist at this layout
	setting  *setupRun // the schema setup running now, if any (setup.go)
	sweeping bool      // the sweeper runs
}

var (
	_ store.Store           = (*Store)(nil)
	_ store.ValueLimiter    = (*Store)(nil)
	_ store.RollbackAdvisor = (*Store)(nil)
)

// New validates cfg and leaseTTL and returns a store that connects and
// creates the job's schema (unless Config.ExistingOnly) on its first
// operation. It does no I/O. Invalid settings return a Fatal
// *coordination.Error naming the field.
func New(cfg Config, leaseTTL time.Duration) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if leaseTTL < MinLeaseTTL {
		return nil, coordination.Errorf(coordination.Fatal, "pgstore: leaseTTL must be >= %s (coordination.Config's floor of LeaseDuration), got %s", MinLeaseTTL, leaseTTL)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{cfg: cfg, leaseTTL: leaseTTL, sc: newSchema(cfg.Job), log: log, done: make(chan struct{})}
	s.q = newQueries(s.sc)
	s.hub = &hub{s: s, sem: make(chan struct{}, 1)}
	if cfg.Pool != nil {
		s.pool = cfg.Pool
	} else {
		pcfg, err := s.poolConfig()
		if err != nil {
			return nil, err
		}
		if s.pool, err = pgxpool.NewWithConfig(context.Background(), pcfg); err != nil {
			return nil, coordination.Errorf(coordination.Fatal, "pgstore: DSN %s: %s", RedactDSN(cfg.DSN), redactedReason(err, cfg))
		}
		s.ownsPool = true
	}
	s.life, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// poolConfig builds the configuration of the pool the store opens: the
// DSN's settings, Config.Password, MaxConns (or the DSN's pool_max_conns)
// connections, and server-side bounds derived from the lease:
// statement_timeout and idle_in_transaction_session_timeout of LeaseTTL/2
// (the longest OpTimeout a coordinator with this lease may use), so that
// no statement holds the job's write lock longer, even when its client is
// gone. A DSN may set them lower; 0 or higher is Fatal (checkBounds).
func (s *Store) poolConfig() (*pgxpool.Config, error) {
	pcfg, err := pgxpool.ParseConfig(s.cfg.DSN)
	if err != nil {
		return nil, coordination.Errorf(coordination.Fatal, "pgstore: DSN %s does not parse: %s", RedactDSN(s.cfg.DSN), redactedReason(err, s.cfg))
	}
	if s.cfg.Password != "" {
		pcfg.ConnConfig.Password = s.cfg.Password
	}
	if err := s.cfg.applyPoolSize(pcfg); err != nil {
		return nil, err
	}
	limit := max(s.leaseTTL/2, time.Millisecond)
	rp := pcfg.ConnConfig.RuntimeParams
	if err := s.cfg.checkBounds(rp, limit); err != nil {
		return nil, err
	}
	bound := strconv.FormatInt(limit.Milliseconds(), 10)
	for k, v := range map[string]string{"statement_timeout": bound, "idle_in_transaction_session_timeout": bound, "application_name": "spate-coordination " + s.cfg.Job} {
		if _, set := rp[k]; !set {
			rp[k] = v
		}
	}
	if pcfg.ConnConfig.ConnectTimeout == 0 {
		pcfg.ConnConfig.ConnectTimeout = defaultConnectTimeout(s.leaseTTL)
	}
	return pcfg, nil
}

// defaultConnectTimeout bounds a connection attempt (dial, TLS, startup
// and authentication) when the DSN sets no connect_timeout: a sixth of the
// lease, between 1s and 5s (5s with coordination.Config's default lease of
// 30s), so that a server that does not answer fails an operation in
// bounded time even on a context without a deadline, and fails it with
// the connection's error, which says nothing was written, rather than
// with the operation's OpTimeout (10s by default) running out first
// (docs/postgres.md, "Connections").
func defaultConnectTimeout(leaseTTL time.Duration) time.Duration {
	return min(max(leaseTTL/6, time.Second), 5*time.Second)
}

// LeaseTTL returns the lease TTL given to New.
func (s *Store) LeaseTTL() time.Duration { return s.leaseTTL }

// MaxValueSize returns 524288: values are capped at 512 KiB, like
// natsstore's, so a job's records fit either production store; a larger
// value is Fatal before anything is sent.
func (s *Store) MaxValueSize() int { return maxValueSize }

// RollbackAdvice says how a PostgreSQL store loses acknowledged writes
// and the fix ([store.RollbackAdvisor]).
func (s *Store) RollbackAdvice() string {
	return "the PostgreSQL database was restored from an older backup or copy, failed over to a lagging asynchronous replica, or ran with synchronous_commit = off: " +
		"use synchronous replication (synchronous_standby_names) and synchronous_commit = on for failovers, and never restore a running job's schema from a backup"
}

// ExpiryPrecision returns 0: an ephemeral key expires LeaseTTL after its
// last winning write by the server's clock, read after the write took the
// job's lock, never earlier. (It implements storetest.ExpiryPrecision.)
// The expiry's Delete reaches watchers within one sweep interval,
// min(LeaseTTL/4, 1s), of the expiry, plus a watch's wake-up.
func (s *Store) ExpiryPrecision() time.Duration { return 0 }

// String renders the store as its job and redacted DSN, so that %v of a
// store never prints a password.
func (s *Store) String() string {
	return fmt.Sprintf("pgstore.Store{Job:%q DSN:%q LeaseTTL:%s}", s.cfg.Job, RedactDSN(s.cfg.DSN), s.leaseTTL)
}

// GoString renders the store like String, for %#v.
func (s *Store) GoString() string { return s.String() }

// LogValue renders the store for slog with its DSN redacted.
func (s *Store) LogValue() slog.Value {
	return slog.GroupValue(slog.String("job", s.cfg.Job), slog.String("dsn", RedactDSN(s.cfg.DSN)), slog.Duration("lease_ttl", s.leaseTTL))
}

// endGrace bounds how long a statement in flight of the sweeper or a watch
// may run on once Close began, or once the watch's owner ended it, before
// it is cancelled (one takes about a millisecond on a server that
// answers).
const endGrace = time.Second

// Close ends every watch (their Err is nil), waits for the store's
// goroutines and closes the pool it opened; a pool passed as Config.Pool is
// left open for its owner to close. A statement the sweeper or a watch has
// in flight is let finish, up to a second, before it is cancelled: pgx gives
// up the connection of a cancelled statement and dials the server to cancel
// it (a new backend's start, tens of milliseconds), and closing the pool
// waits for that. Later operations return Fatal "store is closed". Close
// may be called more than once; it always returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.done)
	settled := make(chan struct{})
	go func() { s.busy.Wait(); close(settled) }()
	t := time.NewTimer(endGrace)
	select {
	case <-settled:
	case <-t.C:
	}
	t.Stop()
	s.cancel()
	s.wg.Wait()
	<-settled
	if s.ownsPool {
		s.pool.Close()
	}
	return nil
}

// goBusy runs f on a goroutine that Close waits for, and whose statement
// in flight it lets finish (endGrace) before it cancels life. Call it
// with mu held and the store not closed, so that Close sees it.
func (s *Store) goBusy(f func()) {
	s.busy.Add(1)
	s.wg.Go(func() {
		defer s.busy.Done()
		f()
	})
}

// isClosed reports whether Close was called.
func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// connect returns the pool, or Fatal after Close, or Retryable when ctx is
// done.
func (s *Store) connect(ctx context.Context) (*pgxpool.Pool, error) {
	if s.isClosed() {
		return nil, errClosed()
	}
	if err := ctx.Err(); err != nil {
		return nil, s.ctxErr("", err)
	}
	return s.pool, nil
}

// opBound is the longest a statement of the store's own (a watch's
// catch-up, a sweep) may take: LeaseTTL/2, at least a second.
func (s *Store) opBound() time.Duration { return max(s.leaseTTL/2, time.Second) }

// checkDurability logs a warning when the server acknowledges commits
// before they are durable (synchronous_commit = off): the store assumes
// on (or stronger), under which a server crash or restart loses no write
// it acknowledged; with off it may lose the last few hundred milliseconds
// of them, and with them fences and commits a worker already acted on.
func (s *Store) checkDurability(ctx context.Context, pool *pgxpool.Pool) {
	var mode string
	if err := pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&mode); err == nil && mode == "off" {
		s.log.Warn("synchronous_commit is off: a server crash may lose writes the store acknowledged; set it to on for the store's role or database", "job", s.cfg.Job)
	}
}
