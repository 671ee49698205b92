// Package embednats starts an in-process NATS server with JetStream for the
// examples and the benchmark programs: loopback only, a random free port,
// no logs, no signal handling, its store in a directory the caller owns.
package embednats

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// readyTimeout bounds the wait for the server to accept connections.
const readyTimeout = 10 * time.Second

// Start starts a server whose JetStream store is dir and waits until it
// accepts connections. The caller stops it with [Stop] and owns dir.
func Start(dir string) (*server.Server, error) {
	srv, err := server.NewServer(&server.Options{
		Host:      "127.0.0.1",
		Port:      -1, // random free port
		JetStream: true,
		StoreDir:  dir,
		NoLog:     true,
		NoSigs:    true, // the program handles its own signals
	})
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(readyTimeout) {
		Stop(srv)
		return nil, errors.New("embedded nats: not ready for connections after " + readyTimeout.String())
	}
	return srv, nil
}

// Stop shuts srv down and waits until it has.
func Stop(srv *server.Server) {
	srv.Shutdown()
	srv.WaitForShutdown()
}
