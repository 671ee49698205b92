package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spate-go/coordination/internal/examplekit"
	"github.com/spate-go/coordination/store/natsstore"
)

// initDB creates a generated table in the file -db names.
func initDB(ctx context.Context, o *options, stdout io.Writer) error {
	db, err := openDB(o.db, 1)
	if err != nil {
		return err
	}
	defer db.Close()
	start := time.Now()
	if err := generateAs(ctx, db, o.table, o.rows); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "tablecopy: created table %s with %d rows in %s (%.1fs)\n", o.table, o.rows, o.db, time.Since(start).Seconds())
	return nil
}

// tablecopy runs the job and returns its report. An error without a report
// means the run could not start.
func tablecopy(ctx context.Context, o *options, stdout io.Writer, stage *examplekit.Stage) (*report, error) {
	stage.Set("preparing the source table")
	path, cleanup, err := sourceDB(ctx, o, stdout)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	db, err := openDB(path, 4)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	t, err := describeTable(ctx, db, o.table)
	if err != nil {
		return nil, err
	}
	keys, err := readKeyRange(ctx, db, t)
	if err != nil {
		return nil, err
	}
	// A whole fleet in this process makes a fresh copy; the processes of a
	// multi-process job share (and resume) one sink.
	if err := prepareSink(ctx, db, t, o.Instance == ""); err != nil {
		return nil, err
	}
	plan := planner{db: db, table: t, keys: keys, splits: o.splits}
	ranges := cutRange(t.name, keys, o.splits)
	counts, err := countRows(ctx, db, t, keys, ranges)
	if err != nil {
		return nil, err
	}
	rep := &report{table: t.name, sink: sinkName(t), keys: keys, splits: len(ranges), instance: o.Instance}
	for _, n := range counts {
		rep.rows += n
	}
	rep.minWeight, rep.maxWeight = slices.Min(counts), slices.Max(counts)

	url, where := o.NATS, "NATS at "+natsstore.RedactURL(o.NATS)
	if url == "" {
		srv, err := startNATS()
		if err != nil {
			return nil, err
		}
		defer func() {
			stage.Set("stopping the embedded NATS server")
			_ = srv.close()
		}()
		url, where = srv.url(), "embedded NATS at "+srv.url()
	}
	job, err := jobName(plan.Fingerprint(), path)
	if err != nil {
		return nil, err
	}
	tl := &tally{out: stdout}
	setup := workerSetup{
		dbPath:     path,
		table:      t,
		page:       o.page,
		sinkResume: o.sinkResume,
		nats:       natsstore.Config{Servers: []string{url}, Job: job},
		tally:      tl,
		log:        examplekit.Logger(o.Log, os.Stderr),
	}
	fmt.Fprintf(stdout, "tablecopy: %d rows of %s (ids %d..%d) into %s, %d splits of %d..%d rows, on %s\n",
		rep.rows, t.name, keys.min, keys.max, rep.sink, rep.splits, rep.minWeight, rep.maxWeight, where)

	f := &fleet{setup: setup, plan: plan, exits: make(chan workerExit, 64)}
	start := time.Now()
	stage.Set("copying")
	if err := f.run(ctx, o, rep, tl); err != nil {
		return nil, err
	}
	rep.elapsed = time.Since(start)
	rep.skipped = tl.skipped.Load()
	rep.cuts = tl.cuts.Load()
	stage.Set("verifying the sink with SQL")
	if rep.verdict, err = verify(context.WithoutCancel(ctx), db, t); err != nil {
		return rep, err
	}
	if o.baseline && o.Instance == "" {
		stage.Set("timing a plain copy")
		rep.plainRows, rep.plainElapsed, err = plainCopy(context.WithoutCancel(ctx), path, t, o.page)
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// sourceDB returns the path of the database to copy: -db when given (it must
// exist), else a generated one in a temporary directory that cleanup removes.
func sourceDB(ctx context.Context, o *options, stdout io.Writer) (path string, cleanup func(), err error) {
	if o.db != "" {
		if _, err := os.Stat(o.db); err != nil {
			return "", nil, fmt.Errorf("-db %s: %w; create it with -db %[1]s -init", o.db, err)
		}
		return o.db, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "tablecopy-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	path = filepath.Join(dir, "source.db")
	db, err := openDB(path, 1)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	start := time.Now()
	err = errors.Join(generateAs(ctx, db, o.table, o.rows), db.Close())
	if err != nil {
		cleanup()
		return "", nil, err
	}
	fmt.Fprintf(stdout, "tablecopy: generated %d rows in %s (%.1fs)\n", o.rows, path, time.Since(start).Seconds())
	return path, cleanup, nil
}

// jobName derives the NATS job name from the planner's fingerprint and the
// database file, so the processes of one copy meet in one job and copies of
// different files do not.
func jobName(fingerprint, dbPath string) (string, error) {
	abs, err := filepath.Abs(dbPath)
	if err != nil {
		return "", fmt.Errorf("-db %s: %w", dbPath, err)
	}
	h := fnv.New64a()
	h.Write([]byte(fingerprint + "\x00" + abs))
	return fmt.Sprintf("tablecopy-%016x", h.Sum64()), nil
}
