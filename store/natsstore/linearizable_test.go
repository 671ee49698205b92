package natsstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/spate-go/coordination/store/storetest"
)

// TestLinearizableClusterRestart checks concurrent histories against a
// 3-node cluster with R3 buckets while the state bucket's stream leader is
// restarted in the middle of each history (storetest.Run checks histories
// without faults, on one node and on the cluster).
func TestLinearizableClusterRestart(t *testing.T) {
	t.Parallel() // waits in real time
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	servers, opts := startCluster(t, 3)
	cfg := Config{Job: "lin", Replicas: 3}
	for _, s := range servers {
		cfg.Servers = append(cfg.Servers, s.ClientURL())
	}
	st := newStore(t, cfg)
	restarts := 0
	restart := func() error {
		i, err := streamLeader(servers, "KV_coordination_lin_state")
		if err != nil {
			return err
		}
		servers[i].Shutdown()
		servers[i].WaitForShutdown()
		s, err := server.NewServer(opts[i])
		if err != nil {
			return fmt.Errorf("restart %s: %w", opts[i].ServerName, err)
		}
		go s.Start()
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
		servers[i] = s
		if !s.ReadyForConnections(10 * time.Second) {
			return fmt.Errorf("restarted %s not ready for connections", opts[i].ServerName)
		}
		restarts++
		return nil
	}
	storetest.CheckLinearizable(t, st, 1, restart)
	t.Logf("%d restarts of the stream leader", restarts)
}

// streamLeader returns the index of the server leading stream, waiting up
// to 10s for one.
func streamLeader(servers []*server.Server, stream string) (int, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		for i, s := range servers {
			if s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
				return i, nil
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no leader of stream %s within 10s", stream)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
