// Command tablecopy is the library's second example, on a real database: a
// bounded job that copies a SQLite table of about a million rows into a sink
// table, divided among several workers coordinated through NATS JetStream.
// One worker is killed midway, at a moment its sink is ahead of its last
// commit to the coordinator, and another joins late; at the end SQL proves
// that the sink equals the source.
//
// Run it with no arguments (it creates its source database in a temporary
// directory; SQLite is the pure-Go modernc.org/sqlite, nothing to install):
//
//	go run ./examples/tablecopy
//
// The planner reads SELECT min(id), max(id), cuts the key range into 64
// ranges of equal width and weights each by its row count, which the skewed
// ids make very uneven. Each lane reads its range in keyset pages (WHERE id
// >= ? AND id < ? ORDER BY id LIMIT ?).
//
// # An exactly-once sink on an at-least-once coordinator
//
// The coordinator guarantees at-least-once: a worker that dies loses what it
// read after its last commit, and its successor replays that from the
// committed watermark. The sink makes the copy exactly-once anyway:
//
//  1. A lane writes each page to the sink in one transaction that inserts
//     the rows with INSERT ... ON CONFLICT (id) DO NOTHING and raises the
//     split's watermark in a sink table (never lowering it).
//  2. Only after that transaction commits does the lane acknowledge the
//     page, and only acknowledged watermarks are committed to the
//     coordinator, so the coordinator's watermark never passes the sink's.
//  3. A lane resuming a split starts at the sink's watermark when it is
//     ahead of the coordinator's (what the dead worker wrote after its last
//     commit is not read again), and whatever is replayed anyway (a zombie
//     writer, or -sink-resume=false) is absorbed by ON CONFLICT DO NOTHING.
//
// The report counts both: rows not replayed thanks to the sink's watermark,
// and duplicates the sink absorbed. The exit status is 0 only when the sink
// equals the source (row count and a checksum over every column of every
// row).
//
// # Flags
//
// -db PATH copies the table named by -table in an existing SQLite file (its
// key column id must be the INTEGER PRIMARY KEY); -db PATH -init creates a
// generated table there. To divide one job among processes, start a NATS
// server (2.11 or later, with JetStream), create the database once, and run
// one worker per terminal:
//
//	go run ./examples/tablecopy -db /tmp/t.db -init
//	go run ./examples/tablecopy -db /tmp/t.db -nats nats://127.0.0.1:4222 -instance a
//	go run ./examples/tablecopy -db /tmp/t.db -nats nats://127.0.0.1:4222 -instance b
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spate-go/coordination/internal/examplekit"
)

func main() { examplekit.Main(run) }

// options are the parsed flags.
type options struct {
	examplekit.Common // -nats, -instance, -timeout, -log

	db         string
	init       bool
	table      string
	rows       int64
	splits     int
	page       int
	workers    int
	joinAt     float64
	killAt     float64
	sinkResume bool
	baseline   bool
}

// usageText heads the -h output and every flag error.
const usageText = `usage: tablecopy [flags]

Copies a SQLite table into a sink table with several coordinated workers,
then checks with SQL that the sink equals the source. With no flags it
generates a 1,000,000-row table in a temporary directory, runs 3 workers
against an embedded NATS server, adds a 4th at 25%, kills one past 50%, and
compares the throughput with a plain single-process copy.
Exit status: 0 when the sink equals the source, 1 when not or on failure,
2 on bad flags.

flags:
`

// parseFlags parses args. Errors have already been printed with the usage.
func parseFlags(args []string, f *examplekit.Flags) (*options, error) {
	o := &options{}
	o.Register(f.FlagSet, "run one worker with this instance id against -nats and -db; start several processes to divide one copy")
	f.StringVar(&o.db, "db", "", "SQLite file holding the source table (default: generate one in a temporary directory)")
	f.BoolVar(&o.init, "init", false, "create a generated table of -rows rows named -table in -db, then exit")
	f.StringVar(&o.table, "table", sourceTable, "source table; its key column id must be the INTEGER PRIMARY KEY; the sink is <table>_copy in the same file (recreated by a run without -instance)")
	f.Int64Var(&o.rows, "rows", 1_000_000, "rows to generate (without -db, or with -init)")
	f.IntVar(&o.splits, "splits", 64, "key ranges to cut the table into")
	f.IntVar(&o.page, "page", 1000, "rows per keyset page (one sink transaction each)")
	f.IntVar(&o.workers, "workers", 3, "workers to start in this process (ignored with -instance)")
	f.Float64Var(&o.joinAt, "join-at", 0.25, "start one more worker when this fraction of the rows is copied; 0 disables (not with -instance)")
	f.Float64Var(&o.killAt, "kill-at", 0.5, "kill a worker once this fraction of the rows is copied, at a moment its sink is ahead of its last commit (so the sink's watermark has replay to avoid); 0 disables (not with -instance)")
	f.BoolVar(&o.sinkResume, "sink-resume", true, "resume a split at the sink's watermark when it is ahead of the coordinator's (false: replay and let the sink absorb)")
	f.BoolVar(&o.baseline, "baseline", true, "also time a plain single-process copy of the table for comparison (not with -instance)")
	if err := f.Parse(args); err != nil {
		return nil, err
	}
	if err := o.Check(f); err != nil {
		return nil, err
	}
	switch {
	case o.init && o.db == "":
		return nil, f.Bad("-init needs -db PATH: the file to create the table in")
	case o.table == "":
		return nil, f.Bad("-table must name a table")
	case o.rows < 0 || o.rows > 100_000_000:
		return nil, f.Bad("-rows must be 0..100000000, got %d", o.rows)
	case o.splits < 1 || o.splits > 100_000:
		return nil, f.Bad("-splits must be 1..100000, got %d", o.splits)
	case o.page < 1 || o.page > 100_000:
		return nil, f.Bad("-page must be 1..100000 rows, got %d", o.page)
	case o.workers < 1 || o.workers > 64:
		return nil, f.Bad("-workers must be 1..64, got %d", o.workers)
	case o.joinAt < 0 || o.joinAt >= 1:
		return nil, f.Bad("-join-at must be a fraction in [0, 1), got %g", o.joinAt)
	case o.killAt < 0 || o.killAt >= 1:
		return nil, f.Bad("-kill-at must be a fraction in [0, 1), got %g", o.killAt)
	case o.killAt > 0 && o.workers < 2 && o.joinAt == 0:
		return nil, f.Bad("-kill-at needs a second worker to take over (-workers 2, or -join-at); use -kill-at 0")
	case (o.NATS == "") != (o.Instance == ""):
		return nil, f.Bad("-nats and -instance go together: each process runs one worker against a shared NATS server")
	case o.Instance != "" && o.db == "":
		return nil, f.Bad("-instance needs -db PATH: the processes of one job must copy the same database file")
	}
	return o, nil
}

// run is the whole program behind main: parse, copy, verify, report. It
// returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, examplekit.NewFlags("tablecopy", usageText, stderr))
	if code, done := examplekit.ParseStatus(err); done {
		return code
	}
	var stage examplekit.Stage
	return examplekit.Bounded("tablecopy", o.Timeout, &stage, stderr, func() int {
		ctx, cancel := examplekit.WorkContext(ctx, o.Timeout)
		defer cancel()
		var err error
		if o.init {
			err = initDB(ctx, o, stdout)
		} else {
			var rep *report
			rep, err = tablecopy(ctx, o, stdout, &stage)
			if rep != nil {
				rep.write(stdout)
				if err == nil && !rep.ok() {
					return examplekit.ExitFailed
				}
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "tablecopy: %v\n", err)
			return examplekit.ExitFailed
		}
		return examplekit.ExitOK
	})
}
