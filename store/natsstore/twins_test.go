package natsstore

import (
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/twintest"
	"github.com/spate-go/coordination/store"
)

// Twins on a real NATS server (twintest.Run): a live worker's twin is
// refused within one heartbeat of its challenge, and a restart after a
// crash reclaims every split within half a lease of its challenge.
func TestATwinIsRefusedAndARestartReclaimsWithinAHeartbeat(t *testing.T) {
	t.Parallel() // waits in real time
	srv := runServer(t, serverOptions(t.TempDir()))
	cfg := coordination.DefaultConfig()
	cfg.LeaseDuration = twinsLease
	cfg.OpTimeout = 250 * time.Millisecond
	cfg.ReconcileInterval = 500 * time.Millisecond
	cfg.ReplanInterval = twinsLease
	cfg.StartupGrace = 0
	twintest.Run(t, cfg, func() store.Store {
		st, err := New(Config{Job: "t", Servers: []string{srv.ClientURL()}}, twinsLease)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	})
}

// twinsLease is the LeaseDuration of the twins test: the takeover and the
// claims took 30 to 130 ms past the quarter-lease twin window on a quiet
// machine at a 2 s lease, and a busy CI machine can take several times
// that; a 4 s lease leaves them a second before the half-lease bound.
const twinsLease = 4 * time.Second
