// Command pgcopy copies a PostgreSQL table into another, exactly once, with
// a fleet of workers in one process (sources/sqlscan on the lane kit, the
// job's coordination in the same database through store/pgstore): each
// batch's rows and its split's progress commit in one transaction. Midway
// it kills a worker (a crash: its leases expire, its splits move) and
// starts two more (the leader moves splits to them), then counts the rows
// missing from the sink and the rows duplicated in it, by SQL, and exits
// non-zero unless both are 0.
//
//	go run ./examples/pgcopy                    # a throwaway server, 1,000,000 rows, 4 workers
//	go run ./examples/pgcopy -postgres "$DSN"   # an existing database
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/lanes"
	"github.com/spate-go/coordination/sources/sqlscan"
	"github.com/spate-go/coordination/store/pgstore"
)

func main() {
	dsn := flag.String("postgres", "", "DSN of an existing database (default: a throwaway server)")
	rows := flag.Int("rows", 1_000_000, "rows in the source table")
	workers := flag.Int("workers", 4, "workers at the start")
	batch := flag.Int("batch", 1000, "rows per batch")
	splits := flag.Int("splits", 32, "planned splits")
	verbose := flag.Bool("v", false, "log the workers' coordination")
	flag.Parse()
	if *rows < 1 || *workers < 1 || *batch < 1 || *splits < 1 {
		log.Fatal("pgcopy: -rows, -workers, -batch and -splits must be at least 1")
	}
	if *dsn == "" {
		srv, err := startServer()
		if err != nil {
			log.Fatalf("pgcopy: %v", err)
		}
		defer srv.remove()
		*dsn = srv.dsn()
	}
	ok, err := run(*dsn, *rows, *workers, *batch, *splits, *verbose)
	if err != nil {
		log.Printf("pgcopy: %v", err)
	}
	if err != nil || !ok {
		os.Exit(1)
	}
}

// run copies and reports; ok when the sink holds every row exactly once.
func run(dsn string, rows, workers, batch, splits int, verbose bool) (bool, error) {
	ctx := context.Background()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return false, err
	}
	defer db.Close()
	suffix := time.Now().Format("150405")
	src, dst, job := "pgcopy_src_"+suffix, "pgcopy_dst_"+suffix, "pgcopy"+suffix
	start := time.Now()
	for _, q := range []string{
		fmt.Sprintf("CREATE TABLE %s (id bigint PRIMARY KEY, account int NOT NULL, amount numeric(12,2) NOT NULL, note text NOT NULL)", src),
		fmt.Sprintf("INSERT INTO %s SELECT i * 3, i %% 9973, (i %% 100000) / 100.0, md5(i::text) FROM generate_series(1, %d) g(i)", src, rows),
		"ANALYZE " + src,
		fmt.Sprintf("CREATE TABLE %s (id bigint NOT NULL, account int NOT NULL, amount numeric(12,2) NOT NULL, note text NOT NULL)", dst),
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return false, err
		}
	}
	fmt.Printf("source %s: %d rows (every third key) in %s; copying into %s with %s, batches of %d, %d planned splits\n",
		src, rows, time.Since(start).Round(time.Millisecond), dst, plural(workers, "worker"), batch, splits)

	f := &fleet{dsn: dsn, job: job, dst: dst, splits: splits, verbose: verbose,
		table: sqlscan.Table{Name: src, Key: "id", Kind: sqlscan.KeyInt, Columns: []string{"id", "account", "amount", "note"}, BatchSize: batch}}
	start = time.Now()
	for range workers {
		if err := f.start(); err != nil {
			return false, err
		}
	}
	copied := func() int64 {
		var n int64
		_ = db.QueryRowContext(ctx, "SELECT count(*) FROM "+dst).Scan(&n)
		return n
	}
	// The faults: at a third of the rows a worker dies; at half, two more
	// join and the leader moves splits to them.
	for stage := 0; stage < 2; {
		time.Sleep(100 * time.Millisecond) // polling the sink's progress
		n := copied()
		switch {
		case stage == 0 && n >= int64(rows)/3:
			victim := f.live[0]
			fmt.Printf("%s: %d rows copied; killing worker %s (a crash: its splits move once its lease expires)\n", time.Since(start).Round(time.Millisecond), n, victim.id)
			f.crash(victim)
			stage++
		case stage == 1 && n >= int64(rows)/2:
			fmt.Printf("%s: %d rows copied; two workers join (the leader moves splits to them)\n", time.Since(start).Round(time.Millisecond), n)
			for range 2 {
				if err := f.start(); err != nil {
					return false, err
				}
			}
			stage++
		case n >= int64(rows):
			stage = 2
		}
	}
	if err := f.wait(); err != nil {
		return false, err
	}
	elapsed := time.Since(start)
	var missing, duplicated, sinkRows int64
	if err := db.QueryRowContext(ctx, fmt.Sprintf(`SELECT
	(SELECT count(*) FROM %[1]s s WHERE NOT EXISTS (SELECT 1 FROM %[2]s d WHERE d.id = s.id)),
	(SELECT count(*) - count(DISTINCT id) FROM %[2]s),
	(SELECT count(*) FROM %[2]s)`, src, dst)).Scan(&missing, &duplicated, &sinkRows); err != nil {
		return false, err
	}
	fmt.Printf("copied in %s (%.0f rows/s); sink %s holds %d rows: %d missing, %d duplicated (counted by SQL)\n",
		elapsed.Round(time.Millisecond), float64(rows)/elapsed.Seconds(), dst, sinkRows, missing, duplicated)
	return missing == 0 && duplicated == 0, nil
}

// fleet is the example's workers.
type fleet struct {
	dsn, job, dst string
	splits        int
	table         sqlscan.Table
	verbose       bool
	next          int
	live          []*worker
	dead          []*worker
}

// worker is one running worker: its coordinator, store, pool and run.
type worker struct {
	id     string
	c      *actors.Coordinator
	st     *pgstore.Store
	db     *sql.DB
	cancel context.CancelFunc
	done   chan error
}

// start starts a worker, as a new process of the job would.
func (f *fleet) start() error {
	f.next++
	w := &worker{id: fmt.Sprintf("worker-%d", f.next), done: make(chan error, 1)}
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = w.id
	// A crashed worker's splits move 4s after its last renewal; shorter
	// leases lapse on a machine this busy (every takeover after a lapse
	// charges the split an attempt, and five quarantine it).
	cfg.LeaseDuration = 4 * time.Second
	cfg.OpTimeout = time.Second
	cfg.ReplanInterval = 4 * time.Second
	cfg.ReconcileInterval = 2 * time.Second
	cfg.DrainDeadline = 2 * time.Second
	cfg.RebalanceDelay = 0
	cfg.StartupGrace = 0
	cfg.Logger = slog.New(slog.DiscardHandler)
	if f.verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil)).With("worker", w.id)
	}
	var err error
	if w.st, err = pgstore.New(pgstore.Config{DSN: f.dsn, Job: f.job}, cfg.LeaseDuration); err != nil {
		return err
	}
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		return err
	}
	if w.c, err = actors.Spawn(engine, w.st, cfg); err != nil {
		return err
	}
	if w.db, err = sql.Open("pgx", f.dsn); err != nil {
		return err
	}
	t := f.table
	t.DB = w.db
	src, err := sqlscan.NewSource[int64](t, sqlscan.CopyInto(w.c, pgx.Identifier{f.dst}, t.Columns), lanes.Options{Logger: cfg.Logger})
	if err != nil {
		return err
	}
	plan, err := sqlscan.Planner[int64](t, "rows", f.splits)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go func() { w.done <- driver.Run(ctx, w.c, src, driver.WithPlanner(plan)) }()
	f.live = append(f.live, w)
	return nil
}

// crash kills w as a crash would: no hand-back, its leases expire.
func (f *fleet) crash(w *worker) {
	w.c.Abort()
	w.cancel()
	<-w.done
	w.close()
	for i, l := range f.live {
		if l == w {
			f.live = append(f.live[:i], f.live[i+1:]...)
			break
		}
	}
	f.dead = append(f.dead, w)
}

// wait waits for every live worker's run to end with the job complete.
func (f *fleet) wait() error {
	var first error
	for _, w := range f.live {
		err := <-w.done
		w.close()
		if err != nil && first == nil {
			first = fmt.Errorf("worker %s: %w", w.id, err)
		}
	}
	return first
}

func (w *worker) close() {
	_ = w.db.Close()
	_ = w.st.Close()
}

// plural returns "1 worker" or "n workers".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
