package sqlscan_test

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/lanes"
	"github.com/spate-go/coordination/sources/sqlscan"
	"github.com/spate-go/coordination/store/pgstore"
)

// A fleet of exactly-once copy workers in one process, each with a store
// handle, a database/sql pool and a coordinator of its own, as separate
// processes would have.

// fleetLease is the workers' LeaseDuration: short, so that a crashed
// worker's splits move within a second or two.
const fleetLease = time.Second

// fleetMaxAttempts is the workers' MaxAttempts. No split of these tests is
// poison, but each lost session charges every split its worker held one
// attempt at the split's takeover (docs/protocol.md, "Sessions"), and at
// fleetLease (and mostly at the property's propertyLease) every server
// restart ends every session: a restart takes 2 to 3 s, more on a loaded
// machine, and the property's two fleets share the server, so a schedule
// lives through the other fleet's restarts as well as its own faults. The
// default 4 quarantined two splits of a schedule on a machine at a load of
// 13; 16 stays well above a schedule's charges (its
// own steps, at most 4, and the other fleet's restarts while it runs) and
// still ends a run that charges without end as Stalled, with its reason,
// before copyDeadline when its takeovers come a lease or two apart.
const fleetMaxAttempts = 16

// copyJob is one copy: src into dst, on server s, by job.
type copyJob struct {
	s         *pgtest.Server
	job       string
	tbl       sqlscan.Table // DB filled per worker
	dst       string
	columns   []string
	splits    int
	cutEvery  time.Duration // Config.CutInterval; 0: the default
	lease     time.Duration // 0: fleetLease
	opTimeout time.Duration // 0: 300ms
	drain     time.Duration // Config.DrainDeadline; 0: lease/2
	// byRange copies with TransactRange: an INSERT ... SELECT of the
	// source's rows between the batch's first and last key, in place of a
	// COPY of the rows the scan read (Transact).
	byRange bool
	// write, when set, is the worker's batch write in place of the stall
	// and the COPY.
	write func(w *copyWorker) sqlscan.TxBatchFunc
}

// copyWorker is one running worker.
type copyWorker struct {
	id     string
	c      *actors.Coordinator
	st     *pgstore.Store
	db     *sql.DB
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	// stall, when set, blocks the worker's batch writes until it is
	// closed: its lanes cannot drain, so revocations are forced.
	mu    sync.Mutex
	stall chan struct{}
	// written counts batches whose statements ran (landed or not).
	written int
}

// start runs worker id of j; it returns once the worker runs.
func (j *copyJob) start(t testing.TB, id string) *copyWorker {
	t.Helper()
	w := &copyWorker{id: id, done: make(chan struct{})}
	lease := cmp.Or(j.lease, fleetLease)
	st, err := pgstore.New(pgstore.Config{DSN: j.s.DSN("postgres"), Job: j.job}, lease)
	if err != nil {
		t.Fatal(err)
	}
	w.st = st
	if w.db, err = sql.Open("pgx", j.s.DSN("postgres")); err != nil {
		t.Fatal(err)
	}
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = id
	cfg.LeaseDuration = lease
	cfg.OpTimeout = cmp.Or(j.opTimeout, 300*time.Millisecond)
	cfg.MaxAttempts = fleetMaxAttempts
	cfg.ReplanInterval = lease
	cfg.ReconcileInterval = max(600*time.Millisecond, 2*cfg.OpTimeout)
	cfg.DrainDeadline = cmp.Or(j.drain, lease/2)
	cfg.RebalanceDelay = 0
	cfg.StartupGrace = 0
	cfg.CutInterval = j.cutEvery
	cfg.Logger = testLogger()
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	if w.c, err = actors.Spawn(e, st, cfg); err != nil {
		t.Fatal(err)
	}
	tbl := j.tbl
	tbl.DB = w.db
	write := func(ctx context.Context, tx pgx.Tx, b *sqlscan.Batch) error {
		w.mu.Lock()
		stall := w.stall
		w.written++
		w.mu.Unlock()
		if stall != nil {
			select {
			case <-stall:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if j.byRange {
			return insertRange(ctx, tx, j.tbl, j.dst, b)
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{j.dst}, j.columns, pgx.CopyFromRows(b.Rows))
		return err
	}
	if j.write != nil {
		write = j.write(w)
	}
	h := sqlscan.Transact(w.c, write)
	if j.byRange {
		h = sqlscan.TransactRange(w.c, write)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	run := func(src driver.SourceReader, plan coordination.Planner) {
		defer close(w.done)
		w.err = driver.Run(ctx, w.c, src, driver.WithPlanner(plan), driver.WithCommitInterval(100*time.Millisecond))
	}
	if tbl.Kind == sqlscan.KeyInt {
		src, plan := mustSource[int64](t, tbl, h, j.splits)
		go run(src, plan)
	} else {
		src, plan := mustSource[[]byte](t, tbl, h, j.splits)
		go run(src, plan)
	}
	return w
}

// insertRange copies the rows of batch b from tbl into dst with INSERT ...
// SELECT between its first and last key (compared as the scan compares
// them: COLLATE "C" for text), after checking that the scan read its
// bounds only.
func insertRange(ctx context.Context, tx pgx.Tx, tbl sqlscan.Table, dst string, b *sqlscan.Batch) error {
	if b.Rows != nil || b.Count < 1 || b.Count > tbl.BatchSize {
		return fmt.Errorf("TransactRange batch with %d rows read and a count of %d; want none read and 1 to %d", len(b.Rows), b.Count, tbl.BatchSize)
	}
	key := tbl.Key
	if tbl.Kind == sqlscan.KeyText {
		key += ` COLLATE "C"`
	}
	tag, err := tx.Exec(ctx, fmt.Sprintf("INSERT INTO %s SELECT %s FROM %s WHERE %s BETWEEN $1 AND $2", dst, strings.Join(tbl.Columns, ", "), tbl.Name, key), b.First, b.Last)
	if err == nil && tag.RowsAffected() != int64(b.Count) {
		// The tests' sources do not change while they are copied.
		return fmt.Errorf("the batch from %v to %v counted %d rows, its INSERT copied %d", b.First, b.Last, b.Count, tag.RowsAffected())
	}
	return err
}

// mustSource returns the source and planner of tbl.
func mustSource[P lanes.Position](t testing.TB, tbl sqlscan.Table, h sqlscan.Handler, n int) (*lanes.Source[P], coordination.Planner) {
	t.Helper()
	src, err := sqlscan.NewSource[P](tbl, h, lanes.Options{Retries: -1, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sqlscan.Planner[P](tbl, "scan", n)
	if err != nil {
		t.Fatal(err)
	}
	return src, plan
}

// crash stops w like a dead process: its coordinator aborts (no hand-back:
// leases expire by TTL), its run ends, its connections close.
func (w *copyWorker) crash() {
	w.c.Abort()
	w.cancel()
	w.unstall()
	<-w.done
	_ = w.db.Close()
	_ = w.st.Close()
}

// wait waits up to d for w's run to end by itself.
func (w *copyWorker) wait(d time.Duration) bool {
	select {
	case <-w.done:
		return true
	case <-time.After(d):
		return false
	}
}

// close releases what a worker whose run ended holds.
func (w *copyWorker) close() {
	w.cancel()
	<-w.done
	_ = w.db.Close()
	_ = w.st.Close()
}

// setStall blocks the worker's next batch writes until unstall.
func (w *copyWorker) setStall() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stall == nil {
		w.stall = make(chan struct{})
	}
}

func (w *copyWorker) unstall() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stall != nil {
		close(w.stall)
		w.stall = nil
	}
}

// sinkCounts counts, by SQL, the source's rows missing from the sink, the
// sink's duplicated rows (copies beyond the first) and its rows with no
// source row.
func sinkCounts(ctx context.Context, s *pgtest.Server, src, dst, key string) (missing, duplicated, extra int64, err error) {
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return 0, 0, 0, err
	}
	defer conn.Close(context.Background())
	q := fmt.Sprintf(`SELECT
	(SELECT count(*) FROM %[1]s s WHERE NOT EXISTS (SELECT 1 FROM %[2]s d WHERE d.%[3]s = s.%[3]s)),
	(SELECT count(*) - count(DISTINCT %[3]s) FROM %[2]s),
	(SELECT count(*) FROM %[2]s d WHERE NOT EXISTS (SELECT 1 FROM %[1]s s WHERE d.%[3]s = s.%[3]s))`, src, dst, key)
	err = conn.QueryRow(ctx, q).Scan(&missing, &duplicated, &extra)
	return missing, duplicated, extra, err
}

// testLogger is the workers' logger: silent unless SQLSCAN_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("SQLSCAN_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}
