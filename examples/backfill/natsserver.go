package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination/internal/embednats"
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
