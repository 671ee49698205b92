// Package embednats starts in-process NATS servers with JetStream for the
// examples, the benchmark programs and the end-to-end tests: loopback only,
// random free ports, no logs, no signal handling, stores in directories the
// caller owns. [Start] runs one server; a [Server] from [StartServer] or
// [StartCluster] can be stopped and restarted on the same ports over the
// same store, as an operator restarts a NATS process.
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
func Start(dir string) (*server.Server, error) { return launch(options(dir)) }

// launch starts a server with opts and waits until it accepts connections.
func launch(opts *server.Options) (*server.Server, error) {
	srv, err := server.NewServer(opts)
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
