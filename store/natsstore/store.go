package natsstore

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// Store is a [store.Store] on two NATS JetStream key-value buckets per job.
// It connects lazily on its first operation and is safe for concurrent use.
// An operation issued while the connection is down waits for the
// reconnect, within its context and at most LeaseTTL/2, before anything is
// sent. Create one with [New].
type Store struct {
	cfg      Config
	leaseTTL time.Duration
	timing   connTiming // derived from leaseTTL
	log      *slog.Logger

	// life is cancelled by Close; it bounds dials and connection attempts.
	life   context.Context
	cancel context.CancelFunc
	// done is closed by Close; watches end (Err nil) when it closes.
	done chan struct{}
	// wg counts connection attempts and watch goroutines; Close waits.
	wg sync.WaitGroup

	puts knownPuts // put revisions that Update may use without a read

	mu      sync.Mutex
	closed  bool
	conn    *conn                 // the established connection, or nil
	attempt *attempt              // the connection attempt in flight, or nil
	watches map[*watcher]struct{} // running watches, for disconnects
}

var (
	_ store.Store           = (*Store)(nil)
	_ store.ValueLimiter    = (*Store)(nil)
	_ store.RollbackAdvisor = (*Store)(nil)
)

// New validates cfg and leaseTTL and returns a store that connects on its
// first operation. It does no I/O. Invalid settings return a Fatal
// *coordination.Error naming the field.
func New(cfg Config, leaseTTL time.Duration) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if leaseTTL < MinLeaseTTL {
		return nil, coordination.Errorf(coordination.Fatal, "natsstore: leaseTTL must be >= 2s (NATS expiry markers have one-second granularity), got %s", leaseTTL)
	}
	cfg.Servers = append([]string(nil), cfg.Servers...)
	if cfg.TLS != nil {
		t := *cfg.TLS
		cfg.TLS = &t
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	life, cancel := context.WithCancel(context.Background())
	return &Store{
		cfg:      cfg,
		leaseTTL: leaseTTL,
		timing:   timingFor(leaseTTL),
		log:      log,
		life:     life,
		cancel:   cancel,
		done:     make(chan struct{}),
		watches:  make(map[*watcher]struct{}),
	}, nil
}

// LeaseTTL returns the lease TTL given to New; it is the lease bucket's TTL.
func (s *Store) LeaseTTL() time.Duration { return s.leaseTTL }

// MaxValueSize returns 524288: both buckets cap values at 512 KiB, and a
// larger value is rejected with Fatal before anything is sent.
func (s *Store) MaxValueSize() int { return maxValueSize }

// RollbackAdvice says how a NATS store loses acknowledged writes and the
// fix ([store.RollbackAdvisor]).
func (s *Store) RollbackAdvice() string {
	return "a NATS server restarted from an older store directory, or lost unsynced writes in a power loss: set sync_interval: always on every NATS server"
}

// Close ends every watch (their Err is nil), waits for the store's
// goroutines and closes the connection it dialed; a connection passed as
// Config.Conn is left open for its owner to close. Later operations return
// Fatal "store is closed". Close may be called more than once; it always
// returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	c := s.conn
	s.conn = nil
	s.mu.Unlock()
	close(s.done)
	s.cancel()
	if c != nil {
		c.unfollow() // ends the status goroutine
	}
	s.wg.Wait()
	if c != nil {
		c.release()
	}
	return nil
}

// String renders the store as its configuration (see [Config.String]:
// passwords, tokens and URL userinfo redacted) and lease TTL. fmt's %v and
// %+v use it, so printing a *Store never shows a secret.
func (s *Store) String() string {
	if s == nil {
		return "natsstore.Store(nil)"
	}
	return fmt.Sprintf("natsstore.Store{Config:%s LeaseTTL:%s}", s.cfg.String(), s.leaseTTL)
}

// GoString renders the store for %#v like String, as Go syntax.
func (s *Store) GoString() string {
	if s == nil {
		return "(*natsstore.Store)(nil)"
	}
	return fmt.Sprintf("&natsstore.Store{Config:%s, LeaseTTL:%d /* %s */}", s.cfg.GoString(), s.leaseTTL, s.leaseTTL)
}

// LogValue renders the store as a slog group of its configuration (see
// [Config.LogValue]) and lease TTL, secrets redacted.
func (s *Store) LogValue() slog.Value {
	if s == nil {
		return slog.StringValue("<nil>")
	}
	return slog.GroupValue(slog.Any("config", s.cfg), slog.String("lease_ttl", s.leaseTTL.String()))
}

// isClosed reports whether Close was called.
func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
