package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
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
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
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
	return &embeddedNATS{srv: srv, dir: dir}, nil
}

// url returns the server's client URL.
func (e *embeddedNATS) url() string { return e.srv.ClientURL() }

// close shuts the server down and removes its store directory.
func (e *embeddedNATS) close() error {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
	return os.RemoveAll(e.dir)
}
