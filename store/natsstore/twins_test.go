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
	cfg.LeaseDuration = testLease
	cfg.OpTimeout = 250 * time.Millisecond
	cfg.ReconcileInterval = 500 * time.Millisecond
	cfg.ReplanInterval = testLease
	cfg.StartupGrace = 0
	twintest.Run(t, cfg, func() store.Store { return storeFor(t, srv) })
}
