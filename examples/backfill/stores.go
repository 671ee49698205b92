package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/natsstore"
	"github.com/spate-go/coordination/store/pgstore"
)

// stores is where a run keeps the job and its ledger: the NATS server
// -nats names, an embedded one, or the PostgreSQL database -postgres
// names. Each worker and the ledger get a store handle of their own.
type stores struct {
	where    string    // how the start line names it, with no secrets
	cli      string    // coordctl's -store for it, with no secrets; "" for an embedded server
	nats     string    // the NATS URL; "" on PostgreSQL
	pg       string    // the -postgres DSN
	embedded *embedded // nil unless the server is this run's own
}

// openStores returns the stores of o: -postgres, -nats, or an embedded
// NATS server over -data or a new temporary directory.
func openStores(o *options) (*stores, error) {
	switch {
	case o.postgres != "":
		return &stores{pg: o.postgres, where: "PostgreSQL at " + pgstore.RedactDSN(o.postgres), cli: pgstore.RedactDSN(o.postgres)}, nil
	case o.nats != "":
		return &stores{nats: o.nats, where: "NATS at " + natsstore.RedactURL(o.nats), cli: natsstore.RedactURL(o.nats)}, nil
	}
	dir := o.data
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "backfill-"); err != nil {
			return nil, fmt.Errorf("embedded NATS store: %w", err)
		}
	}
	e, err := startEmbedded(dir)
	if err != nil {
		return nil, err
	}
	return &stores{nats: e.url, where: "embedded NATS at " + e.url + " (store " + dir + ")", embedded: e}, nil
}

// open returns a store handle on job; existingOnly opens a job that must
// exist already, creating nothing (-verify).
func (s *stores) open(job string, existingOnly bool) (store.Store, error) {
	if s.pg != "" {
		return pgstore.New(pgstore.Config{DSN: s.pg, Job: job, ExistingOnly: existingOnly}, leaseDuration)
	}
	// 64 revisions a key let `coordctl audit` check the fence on a run's
	// every write (a split's records are written a few dozen times at most).
	return natsstore.New(natsstore.Config{Servers: []string{s.nats}, Job: job, History: 64, ExistingOnly: existingOnly}, leaseDuration)
}

// removeJob deletes job and its ledger from the store, so that a rerun
// starts afresh.
func (s *stores) removeJob(ctx context.Context, job string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var errs []error
	for _, j := range []string{job, ledgerJob(job)} {
		st, err := s.open(j, true)
		if err == nil {
			err = errors.Join(st.(jobDeleter).DeleteJob(ctx), st.Close())
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("removing job %s: %w", j, err))
		}
	}
	return errors.Join(errs...)
}

// kept says how to remove job and its ledger, which a run leaves on an
// external store (for -verify): coordctl delete-job removes one job, and
// the ledger is a job of its own.
func (s *stores) kept(job string) string {
	cmd := func(j string) string { return fmt.Sprintf("coordctl -store '%s' -job %s delete-job -yes", s.cli, j) }
	return fmt.Sprintf("job %q and its ledger, the job %q, stay on the store for -verify; remove both with %s and %s", job, ledgerJob(job), cmd(job), cmd(ledgerJob(job)))
}

// unreachableHint is the advice added to a failure to reach the store, ""
// on PostgreSQL, whose store's error says what to check itself.
func (s *stores) unreachableHint() string {
	if s.pg != "" {
		return ""
	}
	return "is the server up? omit -nats and -postgres to run on an embedded NATS server"
}

// jobDeleter is a store that can delete its job: natsstore's and pgstore's.
type jobDeleter interface{ DeleteJob(context.Context) error }

// embedded is an in-process NATS server with JetStream on a random
// loopback port, with its store in dir; it can be stopped and started again
// on the same port and store, as an operator restarts NATS (-outage).
type embedded struct {
	opts *server.Options
	dir  string
	url  string

	mu  sync.Mutex
	srv *server.Server // nil while stopped
}

// startEmbedded starts a server over the store in dir and waits until it
// accepts connections.
func startEmbedded(dir string) (*embedded, error) {
	e := &embedded{dir: dir, opts: &server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir,
		NoLog: true, NoSigs: true, // the program handles its own signals
	}}
	if err := e.start(); err != nil {
		return nil, err
	}
	e.opts.Port = e.srv.Addr().(*net.TCPAddr).Port // the same port after a restart
	e.url = fmt.Sprintf("nats://127.0.0.1:%d", e.opts.Port)
	return e, nil
}

// start starts the stopped server.
func (e *embedded) start() error {
	srv, err := server.NewServer(e.opts)
	if err != nil {
		return fmt.Errorf("embedded NATS: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return errors.New("embedded NATS: not ready for connections after 10s")
	}
	e.mu.Lock()
	e.srv = srv
	e.mu.Unlock()
	return nil
}

// stop shuts the server down and waits until it has; its store stays.
func (e *embedded) stop() {
	e.mu.Lock()
	srv := e.srv
	e.srv = nil
	e.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// outage stops the server, waits d (or until ctx ends) and starts it
// again on the same port and store.
func (e *embedded) outage(ctx context.Context, d time.Duration) error {
	e.stop()
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	return e.start()
}
