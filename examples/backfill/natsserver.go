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
	"github.com/spate-go/coordination/store/natsstore"
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

// natsServer is the NATS server a run uses: the one -nats names, or an
// embedded one over a store directory on this machine.
type natsServer struct {
	url      string          // client URL
	where    string          // how the start line describes it, with no secrets
	embedded *embeddedServer // nil with -nats
	dataDir  string          // the embedded server's store, "" with -nats

	removeStore bool // set by jobCompleted: the embedded store goes once the server is down
}

// openNATS returns the server the run of job uses: -nats, or an embedded
// server over -data (default: a directory per job under the system temp
// dir, so a rerun resumes).
func openNATS(o *options, job string) (*natsServer, error) {
	if o.NATS != "" {
		return &natsServer{url: o.NATS, where: "NATS at " + natsstore.RedactURL(o.NATS)}, nil
	}
	dir := o.data
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "spate-"+job)
	}
	srv, err := startEmbedded(dir)
	if err != nil {
		return nil, err
	}
	return &natsServer{url: srv.URL(), where: "embedded NATS at " + srv.URL() + " (store " + dir + ")", embedded: srv, dataDir: dir}, nil
}

// jobCompleted removes a job that a whole fleet of this process completed, so
// a rerun starts afresh: its buckets on an external server, or the embedded
// server's store once the server is down (see close). A job of several
// processes (-instance) is left for -verify, an interrupted one for the rerun
// that resumes it: the caller does not call jobCompleted for those.
func (s *natsServer) jobCompleted(ctx context.Context, job string, stderr io.Writer) {
	if s.embedded != nil {
		s.removeStore = true
		return
	}
	if err := removeJob(ctx, s.url, job); err != nil {
		fmt.Fprintf(stderr, "backfill: %v\n", err)
	}
}

// close stops the embedded server, if any, and removes its store when the
// job completed.
func (s *natsServer) close(stderr io.Writer) {
	if s.embedded == nil {
		return
	}
	s.embedded.Close()
	if s.removeStore {
		if err := os.RemoveAll(s.dataDir); err != nil {
			fmt.Fprintf(stderr, "backfill: removing the embedded store: %v\n", err)
		}
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
