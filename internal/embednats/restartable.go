package embednats

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// clusterTimeout bounds the wait for a cluster's JetStream meta leader.
const clusterTimeout = 30 * time.Second

// Server is an embedded server that can be stopped and restarted on the
// same client port over the same store directory, as an operator restarts
// a NATS process: clients reconnect to the same URL. Safe for concurrent
// use.
type Server struct {
	opts *server.Options

	mu  sync.Mutex
	srv *server.Server // nil while stopped
}

// StartServer starts a restartable server whose JetStream store is dir
// (which the caller owns) on a random free loopback port, and waits until
// it accepts connections.
func StartServer(dir string) (*Server, error) {
	s := &Server{opts: options(dir)}
	if err := s.Restart(); err != nil {
		return nil, err
	}
	s.opts.Port = s.srv.Addr().(*net.TCPAddr).Port // keep the port across restarts
	return s, nil
}

// options returns the options of a loopback JetStream server over dir.
func options(dir string) *server.Options {
	return &server.Options{
		Host:      "127.0.0.1",
		Port:      -1, // random free port
		JetStream: true,
		StoreDir:  dir,
		NoLog:     true,
		NoSigs:    true, // the program handles its own signals
	}
}

// URL returns the server's client URL (nats://127.0.0.1:port); it stays
// the same across restarts.
func (s *Server) URL() string { return fmt.Sprintf("nats://%s:%d", s.opts.Host, s.opts.Port) }

// Name returns the server's name ("" for a server outside a cluster).
func (s *Server) Name() string { return s.opts.ServerName }

// Stop shuts the server down cleanly (its store is flushed) and waits until
// it has; its store stays. A stopped server's Stop does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		Stop(srv)
	}
}

// Restart starts the stopped server again with the same options and waits
// until it accepts connections. Restarting a running server is an error.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return errors.New("embedded nats: restart of a running server")
	}
	srv, err := launch(s.opts)
	if err != nil {
		return err
	}
	s.srv = srv
	return nil
}

// running returns the running server, or nil while stopped.
func (s *Server) running() *server.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv
}

// StartCluster starts an n-node JetStream cluster on loopback, node i
// storing under dir/n<i> and named n<i>, and waits until it has a meta
// leader and every node is current. Client and route ports are reserved by
// binding and releasing them, so each node restarts on the same ones. The
// caller stops every node.
func StartCluster(dir string, n int) ([]*Server, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, fmt.Errorf("embedded nats cluster: %w", err)
	}
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[n+i]))
	}
	nodes := make([]*Server, n)
	for i := range n {
		o := options(filepath.Join(dir, fmt.Sprintf("n%d", i)))
		o.Port = ports[i]
		o.ServerName = fmt.Sprintf("n%d", i)
		o.Cluster = server.ClusterOpts{Name: "e2e", Host: "127.0.0.1", Port: ports[n+i]}
		o.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		nodes[i] = &Server{opts: o}
		if err := nodes[i].Restart(); err != nil {
			StopAll(nodes)
			return nil, err
		}
	}
	if err := WaitClusterReady(nodes); err != nil {
		StopAll(nodes)
		return nil, err
	}
	return nodes, nil
}

// WaitClusterReady waits until the running nodes have exactly one
// JetStream meta leader and every running node is current.
func WaitClusterReady(nodes []*Server) error {
	deadline := time.Now().Add(clusterTimeout)
	for {
		leaders, current, running := 0, 0, 0
		for _, n := range nodes {
			srv := n.running()
			if srv == nil {
				continue
			}
			running++
			if srv.JetStreamIsLeader() {
				leaders++
			}
			if srv.JetStreamIsCurrent() {
				current++
			}
		}
		if leaders == 1 && current == running {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("embedded nats cluster: no JetStream meta leader with every node current after %s", clusterTimeout)
		}
		time.Sleep(50 * time.Millisecond) // polling the server's state: nothing to wait on
	}
}

// StopAll stops every node.
func StopAll(nodes []*Server) {
	for _, n := range nodes {
		if n != nil {
			n.Stop()
		}
	}
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
