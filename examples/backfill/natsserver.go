package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination/internal/embednats"
	"github.com/spate-go/coordination/internal/examplekit"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/natsstore"
	"github.com/spate-go/coordination/store/pgstore"
)

// embeddedServer is an in-process NATS server with JetStream, listening on a
// random loopback port, with its store in dir. The store outlives the
// server, so a rerun after an interruption or a kill -9 resumes the job;
// -outage stops the server and restarts it on the same port and store.
type embeddedServer struct {
	srv *embednats.Server
}

// startEmbedded starts the server over the store in dir (created if needed)
// and waits until it accepts connections.
func startEmbedded(dir string) (*embeddedServer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	srv, err := embednats.StartServer(dir)
	if err != nil {
		return nil, err
	}
	return &embeddedServer{srv: srv}, nil
}

// URL returns the server's client URL (nats://127.0.0.1:port), the same
// across an outage.
func (e *embeddedServer) URL() string { return e.srv.URL() }

// Close shuts the server down; its store stays.
func (e *embeddedServer) Close() { e.srv.Stop() }

// outage stops the server, waits d (or until ctx ends) and restarts it on
// the same port over the same store, as an operator restarts NATS.
func (e *embeddedServer) outage(ctx context.Context, d time.Duration) error {
	e.srv.Stop()
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	return e.srv.Restart()
}

// natsServer is the store server a run uses: the NATS server -nats names,
// an embedded one over a store directory this run holds (see ownStore), or
// the PostgreSQL database -postgres names (pg).
type natsServer struct {
	pg       string          // the -postgres DSN; "" on NATS
	url      string          // client URL
	where    string          // how the start line describes it, with no secrets
	embedded *embeddedServer // nil with -nats
	store    *storeLock      // the embedded server's store, nil with -nats
	own      bool            // the store is this run's own, not the job's (another run holds that)

	removeStore bool // set by jobCompleted: the embedded store goes once the server is down
}

// openNATS returns the server the run of job uses: -nats, or an embedded
// server over the store ownStore picks, which it says on notice when it is
// not the job's usual one.
func openNATS(o *options, job string, stage *examplekit.Stage, notice io.Writer) (*natsServer, error) {
	if o.postgres != "" {
		return &natsServer{pg: o.postgres, where: "PostgreSQL at " + pgstore.RedactDSN(o.postgres)}, nil
	}
	if o.NATS != "" {
		return &natsServer{url: o.NATS, where: "NATS at " + natsstore.RedactURL(o.NATS)}, nil
	}
	stage.Set("locking the embedded NATS store")
	lock, own, err := ownStore(o.data, job, notice)
	if err != nil {
		return nil, err
	}
	stage.Set("starting the embedded NATS server")
	srv, err := startEmbedded(lock.dir)
	if err != nil {
		return nil, errors.Join(err, lock.release(false))
	}
	return &natsServer{url: srv.URL(), where: "embedded NATS at " + srv.URL() + " (store " + lock.dir + ")", embedded: srv, store: lock, own: own}, nil
}

// ownStore locks the embedded server's store directory for this run, so no
// two runs on this machine ever share one: -data when given (it must be
// free), else the job's directory under the system temp dir (so a rerun
// after an interruption resumes), else, while another run of the job holds
// that, a fresh directory of this run's own (own), said on notice.
func ownStore(data, job string, notice io.Writer) (lock *storeLock, own bool, err error) {
	if data != "" {
		lock, err := lockStore(data)
		if errors.Is(err, errStoreInUse) {
			return nil, false, fmt.Errorf("-data: %w; wait for that run to end, or give this one another -data directory", err)
		}
		return lock, false, err
	}
	lock, err = lockStore(filepath.Join(os.TempDir(), "spate-"+job))
	if !errors.Is(err, errStoreInUse) {
		return lock, false, err
	}
	dir, mkErr := os.MkdirTemp("", "spate-"+job+"-")
	if mkErr != nil {
		return nil, false, errors.Join(err, mkErr)
	}
	fmt.Fprintf(notice, "backfill: the job's %v; this run uses a store of its own, %s, removed when the job completes (to resume it after an interruption, pass -data %[2]s)\n", err, dir)
	lock, err = lockStore(dir)
	return lock, true, err
}

// resumeHint is what an interrupted run says to resume it: the flags again,
// and -data when the store was this run's own.
func (s *natsServer) resumeHint() string {
	if s.own {
		return "run again with -data " + s.store.dir + " to resume"
	}
	return "run again to resume"
}

// jobCompleted removes a job that a whole fleet of this process completed, so
// a rerun starts afresh: its buckets on an external server, or the embedded
// server's store once the server is down (see close). A job of several
// processes (-instance) is left for -verify, an interrupted one for the rerun
// that resumes it: the caller does not call jobCompleted for those.
func (s *natsServer) jobCompleted(ctx context.Context, job string, stderr io.Writer) {
	if s.pg != "" {
		if err := removePGJob(ctx, s.pg, job); err != nil {
			fmt.Fprintf(stderr, "backfill: %v\n", err)
		}
		return
	}
	if s.embedded != nil {
		s.removeStore = true
		return
	}
	if err := removeJob(ctx, s.url, job); err != nil {
		fmt.Fprintf(stderr, "backfill: %v\n", err)
	}
}

// close stops the embedded server, if any, removes its store when the job
// completed, and releases the store.
func (s *natsServer) close(stage *examplekit.Stage, stderr io.Writer) {
	if s.embedded == nil {
		return
	}
	stage.Set("stopping the embedded NATS server")
	s.embedded.Close()
	stage.Set("removing the embedded NATS store")
	if err := s.store.release(s.removeStore); err != nil {
		fmt.Fprintf(stderr, "backfill: releasing the embedded store %s: %v\n", s.store.dir, err)
	}
}

// removeJob deletes the KV buckets of job on the server at url: the two
// natsstore created (coordination_<job>_state and coordination_<job>_lease)
// and the ledger. The program calls it after a whole-fleet run against an
// external server completed, so a rerun starts afresh.
func removeJob(ctx context.Context, url, job string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	nc, err := nats.Connect(url, nats.Timeout(5*time.Second))
	if err != nil {
		return fmt.Errorf("removing job %s: %w", job, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("removing job %s: %w", job, err)
	}
	var errs []error
	for _, bucket := range jobBuckets(job) {
		if err := js.DeleteKeyValue(ctx, bucket); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			errs = append(errs, fmt.Errorf("removing bucket %s: %w", bucket, err))
		}
	}
	return errors.Join(errs...)
}

// jobBuckets names the KV buckets of job: natsstore's two (see the README's
// production notes) and the ledger.
func jobBuckets(job string) []string {
	return []string{"coordination_" + job + "_state", "coordination_" + job + "_lease", ledgerBucket(job)}
}

// openLedger opens job's ledger on the run's store, creating it if needed.
func (s *natsServer) openLedger(ctx context.Context, job string) (*ledger, error) {
	if s.pg != "" {
		return openPGLedger(ctx, s.pg, job, true)
	}
	return openLedger(ctx, s.url, job)
}

// storeOpener returns how a worker opens job's coordination store: a
// natsstore whose state bucket keeps 64 revisions per key (so the final
// audit sees every write of a run of this size: a split's records are
// written a few dozen times at most), or a pgstore (whose change log keeps
// every write of the last 10 minutes).
func (s *natsServer) storeOpener(job string) func() (store.Store, error) {
	if s.pg != "" {
		cfg := pgstore.Config{DSN: s.pg, Job: job}
		return func() (store.Store, error) { return pgstore.New(cfg, leaseDuration) }
	}
	cfg := natsstore.Config{Servers: []string{s.url}, Job: job, History: 64}
	return func() (store.Store, error) { return natsstore.New(cfg, leaseDuration) }
}

// ctlFlags are coordctl's flags naming the run's store and job.
func (s *natsServer) ctlFlags(job string) []string {
	if s.pg != "" {
		return []string{"-store", s.pg, "-job", job}
	}
	return []string{"-nats", s.url, "-job", job}
}

// removePGJob drops the schemas of job and of its ledger on the database
// at dsn, so a rerun starts afresh.
func removePGJob(ctx context.Context, dsn, job string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var errs []error
	for _, j := range []string{job, ledgerJob(job)} {
		st, err := pgstore.New(pgstore.Config{DSN: dsn, Job: j, ExistingOnly: true}, leaseDuration)
		if err == nil {
			err = st.DeleteJob(ctx)
			_ = st.Close()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("removing job %s: %w", j, err))
		}
	}
	return errors.Join(errs...)
}
