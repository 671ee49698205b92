package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// embeddedServer is an in-process NATS server with JetStream, listening on a
// random loopback port, with its store in a temporary directory.
type embeddedServer struct {
	srv *server.Server
	dir string
}

// startEmbedded starts the server and waits until it accepts connections.
func startEmbedded() (*embeddedServer, error) {
	dir, err := os.MkdirTemp("", "backfill-nats-")
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	srv, err := server.NewServer(&server.Options{
		Host:      "127.0.0.1",
		Port:      -1, // random free port
		JetStream: true,
		StoreDir:  dir,
		NoLog:     true,
		NoSigs:    true, // this program handles its own signals
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("embedded nats: %w", err), os.RemoveAll(dir))
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, errors.Join(errors.New("embedded nats: not ready for connections after 10s"), os.RemoveAll(dir))
	}
	return &embeddedServer{srv: srv, dir: dir}, nil
}

// URL returns the server's client URL (nats://127.0.0.1:port).
func (e *embeddedServer) URL() string { return e.srv.ClientURL() }

// Close shuts the server down and removes its store directory.
func (e *embeddedServer) Close() error {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
	return os.RemoveAll(e.dir)
}

// removeJob deletes the two KV buckets natsstore created for job
// (coordination_<job>_state and coordination_<job>_lease) on the server at
// url. The program calls it after a whole-fleet run against an external
// server, whose job name is fresh per run, so reruns leave nothing behind.
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

// jobBuckets names the KV buckets of job (SPEC §25.3).
func jobBuckets(job string) []string {
	return []string{"coordination_" + job + "_state", "coordination_" + job + "_lease"}
}
