package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store/natsstore"
	"github.com/spate-go/coordination/store/pgstore"
)

// options are the parsed flags.
type options struct {
	nats     string // -nats: server URL; "" runs an embedded server
	postgres string // -postgres: a PostgreSQL DSN instead of NATS
	instance string // -instance: run one worker with this id; "" runs a fleet
	verify   bool   // -verify: read the ledger only
	job      string // -job: the job's name; "" derives it from the plan
	data     string // -data: the embedded server's store directory

	workers     int
	lanes       int // splits each worker reads at once (Config.MaxInFlight)
	splits      int
	records     int64
	misestimate bool  // every split weighs the same; one holds a quarter of the records
	pace        int64 // records per second a lane reads

	crashAt      float64
	outage       time.Duration
	outageAt     float64
	pauseAfter   time.Duration
	runtimeSplit bool

	timeout time.Duration
	log     string
	quiet   bool
}

// usageText heads the -h output and every flag error.
const usageText = `usage: backfill [flags]

Backfills a generated data set with several coordinated workers and reports
records planned, delivered, duplicated and lost, for the whole job: every
delivery is recorded in the job's ledger in its store (NATS, or PostgreSQL
with -postgres). With no flags it runs 4 workers against an embedded NATS
server and crashes one of them at 40%.

Exit status: 0 when the job completed and nothing was lost, 1 on loss,
failure or an unreachable store, 2 on bad flags, 3 when interrupted by
SIGINT or SIGTERM (the report says how to resume).

flags:
`

// errHelp is what parseFlags returns for -h.
var errHelp = flag.ErrHelp

// logLevels are the -log values.
const logLevels = "debug, info, warn, error or off"

// parseFlags parses args; a mistake is printed to stderr with the usage and
// returned.
func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	f := flag.NewFlagSet("backfill", flag.ContinueOnError)
	f.SetOutput(stderr)
	f.Usage = func() {
		fmt.Fprint(stderr, usageText)
		f.PrintDefaults()
	}
	f.StringVar(&o.nats, "nats", "", "NATS server URL (nats://host:port or tls://host:port) instead of the embedded server")
	f.StringVar(&o.postgres, "postgres", "", "PostgreSQL DSN (postgres://user@host:5432/db?sslmode=...) to coordinate and keep the ledger in, instead of NATS; the password from PGPASSWORD or ~/.pgpass")
	f.StringVar(&o.instance, "instance", "", "run one worker with this instance id against -nats or -postgres; start several processes to divide one job")
	f.BoolVar(&o.verify, "verify", false, "only read the job's ledger on -nats or -postgres and report whether every record was delivered (same -splits, -records, -misestimate or -job as the run)")
	f.StringVar(&o.job, "job", "", fmt.Sprintf("job name, 1..%d characters of [A-Za-z0-9_-] (1..%d with -postgres); default derived from the plan, so processes given the same -splits, -records and -misestimate share a job", maxJob, maxPostgresJob))
	f.StringVar(&o.data, "data", "", "store directory of the embedded NATS server, kept until the job completes (default: a new temporary directory; an interrupted run names it, to resume)")
	f.IntVar(&o.workers, "workers", 4, "workers to run in this process (ignored with -instance)")
	f.IntVar(&o.lanes, "lanes", 8, "splits each worker reads at once (its lanes, Config.MaxInFlight)")
	f.IntVar(&o.splits, "splits", 64, "splits to cut the data set into")
	f.Int64Var(&o.records, "records", 1_000_000, "records in the data set")
	f.BoolVar(&o.misestimate, "misestimate", false, "weigh every split the same while one holds a quarter of the records, as a planner that guessed wrong would (a job of its own)")
	f.Int64Var(&o.pace, "pace", 2000, "records per second each lane reads")
	f.Float64Var(&o.crashAt, "crash-at", 0.4, "crash one worker (Abort) when this fraction of the records is delivered; 0 disables (not with -instance)")
	f.DurationVar(&o.outage, "outage", 0, "stop the embedded NATS server for this long once -outage-at of the records is delivered, then restart it on the same store; 0 disables")
	f.Float64Var(&o.outageAt, "outage-at", 0.5, "fraction of the records delivered when -outage starts")
	f.DurationVar(&o.pauseAfter, "pause-after", 0, "how long a lane reads on while its commits are not landing before it pauses (driver.WithPauseAfter); 0 means one commit interval")
	f.BoolVar(&o.runtimeSplit, "runtime-split", true, "let the leader cut a straggling split at runtime when lanes run dry; false reads every split as planned (Config.CutInterval < 0)")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound on the whole run, shutdown included")
	f.StringVar(&o.log, "log", "warn", "library log level: "+logLevels)
	f.BoolVar(&o.quiet, "quiet", false, "print only the final report (and no library logs unless -log is given)")
	if err := f.Parse(args); err != nil {
		return nil, err
	}
	bad := func(format string, a ...any) error {
		err := fmt.Errorf(format, a...)
		fmt.Fprintf(stderr, "backfill: %v\n\n", err)
		f.Usage()
		return err
	}
	given := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if o.quiet && !given["log"] {
		o.log = "off"
	}
	if given["job"] && o.job == "" {
		return nil, bad("-job must not be empty; omit it to derive the job's name from the plan")
	}
	if err := o.check(); err != nil {
		return nil, bad("%v", err)
	}
	if f.NArg() > 0 {
		return nil, bad("unexpected argument %q (all settings are flags)", f.Arg(0))
	}
	return o, nil
}

// check returns the first mistake in o, or nil.
func (o *options) check() error {
	external := o.nats != "" || o.postgres != ""
	switch {
	case o.workers < 1 || o.workers > 64:
		return fmt.Errorf("-workers must be 1..64, got %d", o.workers)
	case o.lanes < 1 || o.lanes > 1024:
		return fmt.Errorf("-lanes must be 1..1024, got %d", o.lanes)
	case o.splits < 1 || o.splits > 100_000:
		return fmt.Errorf("-splits must be 1..100000, got %d", o.splits)
	case o.records < 1 || o.records > 100_000_000:
		return fmt.Errorf("-records must be 1..100000000, got %d", o.records)
	case o.pace < 1:
		return fmt.Errorf("-pace must be at least 1 record per second, got %d", o.pace)
	case o.crashAt < 0 || o.crashAt >= 1:
		return fmt.Errorf("-crash-at must be a fraction in [0, 1), got %g", o.crashAt)
	case o.instance == "" && o.crashAt > 0 && o.workers < 2:
		return errors.New("-crash-at needs at least 2 workers (someone must recover the crashed worker's splits); use -crash-at 0")
	case o.outage < 0:
		return fmt.Errorf("-outage must not be negative, got %s", o.outage)
	case o.outage > 0 && external:
		return errors.New("-outage stops the embedded NATS server; it cannot be used with -nats or -postgres")
	case o.outageAt <= 0 || o.outageAt >= 1:
		return fmt.Errorf("-outage-at must be a fraction in (0, 1), got %g", o.outageAt)
	case o.pauseAfter < 0:
		return fmt.Errorf("-pause-after must not be negative, got %s", o.pauseAfter)
	case o.timeout <= 0:
		return fmt.Errorf("-timeout must be positive, got %s", o.timeout)
	case !validLevel(o.log):
		return fmt.Errorf("-log must be %s, got %q", logLevels, o.log)
	case o.postgres != "" && o.nats != "":
		return errors.New("-postgres and -nats name two stores; pass one")
	case o.postgres != "" && !strings.HasPrefix(o.postgres, "postgres://") && !strings.HasPrefix(o.postgres, "postgresql://"):
		// Not echoed: pgstore.RedactDSN masks passwords of postgres:// URLs only.
		return errors.New("-postgres must be a postgres:// or postgresql:// URL (postgres://user@host:5432/db?sslmode=...)")
	case o.verify && !external:
		return errors.New("-verify needs -nats or -postgres: it reads the job's ledger there")
	case o.instance != "" && !external:
		return errors.New("-instance needs -nats or -postgres: the processes of one job must share a store")
	}
	if o.nats != "" {
		// As the store will check it, but before anything starts.
		var bad *coordination.Error
		if err := (natsstore.Config{Servers: []string{o.nats}, Job: "j"}).Validate(); errors.As(err, &bad) {
			return fmt.Errorf("-nats: %s", strings.TrimPrefix(bad.Reason, "natsstore: Servers[0]: "))
		}
	}
	if o.instance != "" {
		cfg := coordination.DefaultConfig()
		cfg.InstanceID = o.instance
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("-instance: %v", err)
		}
	}
	if o.job != "" {
		// The ledger is the job <job>_ledger; both names must be valid,
		// by the rule of the store in use.
		if o.postgres != "" {
			if err := (pgstore.Config{DSN: "postgres://127.0.0.1", Job: ledgerJob(o.job)}).Validate(); err != nil {
				return fmt.Errorf("-job must be 1..%d characters of [A-Za-z0-9_-] on PostgreSQL (its ledger is the job %s, whose schema name must fit), got %q", maxPostgresJob, ledgerJob("<job>"), o.job)
			}
		} else if err := (natsstore.Config{Servers: []string{"nats://127.0.0.1"}, Job: ledgerJob(o.job)}).Validate(); err != nil {
			return fmt.Errorf("-job must be 1..%d characters of [A-Za-z0-9_-] (its ledger is the job %s), got %q", maxJob, ledgerJob("<job>"), o.job)
		}
	}
	return nil
}

// maxJob is the longest -job on NATS: its ledger's name must fit natsstore's
// 64 characters.
var maxJob = 64 - len(ledgerJob(""))

// maxPostgresJob is the longest -job on PostgreSQL: its ledger's name must
// fit pgstore's 50 characters (pgstore.Config.Job).
var maxPostgresJob = 50 - len(ledgerJob(""))
