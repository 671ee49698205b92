package main

import (
	"strings"
	"time"

	"github.com/spate-go/coordination/internal/examplekit"
	"github.com/spate-go/coordination/store/natsstore"
	"github.com/spate-go/coordination/store/pgstore"
)

// options are the parsed flags.
type options struct {
	examplekit.Common // -nats, -instance, -timeout, -log

	postgres string // -postgres: the DSN of a PostgreSQL database instead of NATS

	workers  int
	splits   int
	records  int64
	crashAt  float64
	outage   time.Duration
	outageAt float64
	pauseAt  time.Duration
	job      string
	metrics  string
	pace     int64
	quiet    bool
	plain    bool
	verify   bool
	audit    bool
	data     string

	lanes        int  // -lanes: splits each worker reads at once (Config.MaxInFlight)
	misestimate  bool // -misestimate: equal weights, one split of a quarter of the records
	runtimeSplit bool // -runtime-split: the source lets the leader cut straggling splits
}

// usageText heads the -h output and every flag error.
const usageText = `usage: backfill [flags]

Backfills a generated data set with several coordinated workers and reports
records planned, delivered, duplicated and lost, for the whole job: every
delivery is recorded in the job's ledger in its store (NATS, or PostgreSQL
with -postgres) before it is acknowledged.
With no flags it runs 4 workers against an embedded NATS server and crashes
one of them at 40%. An interrupted run (SIGINT, SIGTERM, kill -9) resumes
when run again with the same flags.

Exit status: 0 when the job completed and nothing was lost, 1 on loss,
failure or unreachable NATS, 2 on bad flags, 3 when interrupted by SIGINT
or SIGTERM (run again to resume).

flags:
`

// parseFlags parses args. Errors have already been printed with the usage.
func parseFlags(args []string, f *examplekit.Flags) (*options, error) {
	o := &options{}
	o.Register(f.FlagSet, "run one worker with this instance id against -nats or -postgres; start several processes to divide one job")
	f.StringVar(&o.postgres, "postgres", "", "PostgreSQL DSN (postgres://user@host:5432/db?sslmode=...) to coordinate and keep the ledger in, instead of NATS; the password from PGPASSWORD or ~/.pgpass")
	f.IntVar(&o.workers, "workers", 4, "workers to run in this process (ignored with -instance)")
	f.IntVar(&o.splits, "splits", 64, "splits to cut the data set into")
	f.Int64Var(&o.records, "records", 1_000_000, "records in the data set")
	f.Float64Var(&o.crashAt, "crash-at", 0.4, "crash one worker (Abort) when this fraction of the records is delivered; 0 disables (not used with -instance)")
	f.DurationVar(&o.outage, "outage", 0, "stop the embedded NATS server for this long once -outage-at of the records is delivered, then restart it on the same store; 0 disables (not with -nats)")
	f.Float64Var(&o.outageAt, "outage-at", 0.5, "fraction of the records delivered when -outage starts")
	f.DurationVar(&o.pauseAt, "pause-after", 0, "how long a lane reads on while its commits are not landing before its intake pauses (driver.WithPauseAfter); 0 means one commit interval")
	f.StringVar(&o.job, "job", "", "job name (NATS bucket suffix); default derived from -splits and -records")
	f.StringVar(&o.metrics, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics (for example 127.0.0.1:9100)")
	f.Int64Var(&o.pace, "pace", 2000, "records per second each lane reads")
	f.BoolVar(&o.quiet, "quiet", false, "print only the final report: no progress, no event log, and no library logs unless -log is given")
	f.BoolVar(&o.plain, "plain", false, "plain progress lines instead of bars even on a terminal")
	f.BoolVar(&o.verify, "verify", false, "only read the job's ledger on -nats or -postgres and report whether every record was delivered (same -splits, -records or -job as the run)")
	f.BoolVar(&o.audit, "audit", true, "after a completed run, audit the job's write history like coordctl audit (fencing invariants per split) and fail on a violation")
	f.StringVar(&o.data, "data", "", "store directory of the embedded NATS server, held by one run at a time and kept until the job completes so a rerun resumes (default: the job's directory under the system temp dir, or one of this run's own while another run holds that)")
	f.IntVar(&o.lanes, "lanes", 8, "splits each worker reads at once (its lanes, Config.MaxInFlight)")
	f.BoolVar(&o.misestimate, "misestimate", false, "weigh every split the same while one holds a quarter of the records, as a planner that guessed wrong would (a job of its own)")
	f.BoolVar(&o.runtimeSplit, "runtime-split", true, "let the leader cut a straggling split at runtime when lanes run dry (the source implements driver.Splitter); false reads every split as planned")
	if err := f.Parse(args); err != nil {
		return nil, err
	}
	if err := o.Check(f); err != nil {
		return nil, err
	}
	if o.quiet && !f.Given("log") {
		o.Log = "off"
	}
	switch {
	case o.workers < 1 || o.workers > 64:
		return nil, f.Bad("-workers must be 1..64, got %d", o.workers)
	case o.splits < 1 || o.splits > 100_000:
		return nil, f.Bad("-splits must be 1..100000, got %d", o.splits)
	case o.records < 0 || o.records > 100_000_000:
		return nil, f.Bad("-records must be 0..100000000, got %d", o.records)
	case o.crashAt < 0 || o.crashAt >= 1:
		return nil, f.Bad("-crash-at must be a fraction in [0, 1), got %g", o.crashAt)
	case o.outage < 0:
		return nil, f.Bad("-outage must not be negative, got %s", o.outage)
	case o.postgres != "" && o.NATS != "":
		return nil, f.Bad("-postgres and -nats name two stores; pass one")
	case o.postgres != "" && !strings.HasPrefix(o.postgres, "postgres://") && !strings.HasPrefix(o.postgres, "postgresql://"):
		return nil, f.Bad("-postgres must be a postgres:// URL, got %q", pgstore.RedactDSN(o.postgres))
	case o.outage > 0 && o.postgres != "":
		return nil, f.Bad("-outage stops the embedded NATS server; it cannot be used with -postgres")
	case o.postgres != "" && len(o.job) > maxPostgresJob:
		return nil, f.Bad("-job must be at most %d characters on PostgreSQL (its ledger's schema name must fit), got %d", maxPostgresJob, len(o.job))
	case o.outage > 0 && o.NATS != "":
		return nil, f.Bad("-outage stops the embedded NATS server; it cannot be used with -nats")
	case o.outageAt <= 0 || o.outageAt >= 1:
		return nil, f.Bad("-outage-at must be a fraction in (0, 1), got %g", o.outageAt)
	case o.pauseAt < 0:
		return nil, f.Bad("-pause-after must not be negative, got %s", o.pauseAt)
	case o.lanes < 1 || o.lanes > 1024:
		return nil, f.Bad("-lanes must be 1..1024, got %d", o.lanes)
	case o.pace < 1:
		return nil, f.Bad("-pace must be at least 1 record per second, got %d", o.pace)
	case o.verify && o.NATS == "" && o.postgres == "":
		return nil, f.Bad("-verify needs -nats or -postgres: it reads the job's ledger there")
	case o.Instance != "" && o.NATS == "" && o.postgres == "":
		return nil, f.Bad("-instance needs -nats or -postgres: the processes of one job must share a store")
	case o.Instance == "" && o.crashAt > 0 && o.workers < 2:
		return nil, f.Bad("-crash-at needs at least 2 workers (someone must recover the crashed worker's splits); use -crash-at 0")
	}
	if o.job != "" {
		if _, err := natsstore.New(natsstore.Config{Servers: []string{"nats://127.0.0.1"}, Job: o.job}, leaseDuration); err != nil {
			return nil, f.Bad("-job: %v", err)
		}
	}
	return o, nil
}
