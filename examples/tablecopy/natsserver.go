package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/spate-go/coordination/internal/embednats"
)

// embeddedNATS is an in-process NATS server with JetStream on a random
// loopback port, its store in a temporary directory.
type embeddedNATS struct {
	srv *server.Server
	dir string
}

// startNATS starts the server and waits until it accepts connections.
func startNATS() (*embeddedNATS, error) {
	dir, err := os.MkdirTemp("", "tablecopy-nats-")
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	srv, err := embednats.Start(dir)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	return &embeddedNATS{srv: srv, dir: dir}, nil
}

// url returns the server's client URL.
func (e *embeddedNATS) url() string { return e.srv.ClientURL() }

// close shuts the server down and removes its store directory.
func (e *embeddedNATS) close() error {
	embednats.Stop(e.srv)
	return os.RemoveAll(e.dir)
}
