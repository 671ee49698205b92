package e2e

import (
	"testing"
	"time"

	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/pgstore"
)

// postgresDeployment runs the job on database postgres of srv; coordctl
// reads the lease from the job.
func postgresDeployment(srv *pgtest.Server, job string) deployment {
	cfg := pgstore.Config{DSN: srv.DSN("postgres"), Job: job}
	return deployment{
		open: func() (store.Store, error) { return pgstore.New(cfg, leaseDuration) },
		ctl:  []string{"-store", cfg.DSN, "-job", job},
	}
}

// The PostgreSQL tests do not run in parallel: they run one after the
// other before the NATS tests, whose replay bounds are timing-sensitive,
// so that no two jobs share the two cores.

func TestJobSurvivesPostgresRestart(t *testing.T) {
	survivePostgres(t, "e2e-pg-restart", "restarted (fast shutdown)", (*pgtest.Server).Stop)
}

func TestJobSurvivesPostgresKill(t *testing.T) {
	survivePostgres(t, "e2e-pg-kill", "killed with SIGKILL", (*pgtest.Server).Kill)
}

// survivePostgres runs the job on a server of its own, takes the server
// down with stop at 30% of the job, starts it again on the same data
// directory after the outage, and judges the run: every row delivered, no
// watermark decreased, replays within the bound, coordctl audit clean.
func survivePostgres(t *testing.T, name, how string, stop func(*pgtest.Server)) {
	srv := pgtest.StartT(t)
	j := startJob(t, postgresDeployment(srv, name))
	pw := j.watchProgress()
	j.waitDelivered(0.3)
	stop(srv)
	t.Logf("server %s at %d rows delivered", how, j.out.delivered())
	time.Sleep(outage) // the outage itself, not a wait for a condition
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	j.finish()
	pw.finish(t)
	j.judge()
}
