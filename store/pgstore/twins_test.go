package pgstore

import (
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/internal/twintest"
	"github.com/spate-go/coordination/store"
)

// twinsLease is the LeaseDuration of the twins test: long enough that the
// store's own latency under -race on a busy machine stays small beside the
// quarter-lease twin window the bound leaves for it: from the takeover to
// the claims took 150 to 300 ms on a quiet machine and 1.1 s in CI, beside
// the package's other tests, when the lease was 3 s (a 750 ms margin).
const twinsLease = 6 * time.Second

// Twins on a real PostgreSQL server (twintest.Run), the live worker
// answering from its LISTEN watch: a live worker's twin is refused within
// one heartbeat of its challenge, and a restart after a crash reclaims
// every split within half a lease of its challenge.
func TestATwinIsRefusedAndARestartReclaimsWithinAHeartbeat(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel() // waits in real time
	job := pgtest.UniqueName("twins")
	cfg := coordination.DefaultConfig()
	cfg.LeaseDuration = twinsLease
	cfg.OpTimeout = time.Second // a new connection's first catalog checks took over 250 ms under load
	cfg.ReconcileInterval = 2 * cfg.OpTimeout
	cfg.ReplanInterval = twinsLease
	cfg.StartupGrace = 0
	twintest.Run(t, cfg, func() store.Store { return newStore(t, s, Config{Job: job}, twinsLease) })
}
