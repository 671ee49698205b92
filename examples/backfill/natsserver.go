package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
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
