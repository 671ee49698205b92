// Command bench-pgcopy measures exactly-once table copies (sources/sqlscan
// into PostgreSQL, each batch's rows and its split's progress in one
// transaction) against a plain single-process batched copy on the same
// throwaway server with the same batch size, runs interleaved (A B A B ...),
// medians of -rounds, each run's wall time and its processor time (this
// process's and the server's: the figure that holds on a loaded machine);
// and the planner's boundary queries on a -planrows table: EXPLAIN
// (ANALYZE, BUFFERS) and the split weights against the true row counts.
//
//	go run ./cmd/bench-pgcopy                  (from bench/)
//	go run ./cmd/bench-pgcopy -rows 300000 -planrows 0
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/lanes"
	"github.com/spate-go/coordination/sources/sqlscan"
	"github.com/spate-go/coordination/store/pgstore"
)

func main() {
	rows := flag.Int("rows", 1_000_000, "rows of the copy figures' source table (0: skip them)")
	batch := flag.Int("batch", 1000, "rows per batch, every variant")
	rounds := flag.Int("rounds", 3, "interleaved rounds; figures are medians")
	planRows := flag.Int("planrows", 10_000_000, "rows of the planner figure's table (0: skip it)")
	only := flag.String("only", "", "comma-separated numbers of the variants to run, from 0 (default all)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the copy figures to this file")
	pgStat := flag.Bool("pgstat", false, "print the server's statements by total time after the copy figures (pg_stat_statements)")
	flag.Parse()
	settings := []string{"fsync=off", "synchronous_commit=off", "shared_buffers=256MB", "max_wal_size=4GB", "autovacuum=off"}
	if *pgStat {
		settings = append(settings, "shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track_utility=off")
	}
	srv, err := pgtest.Start(settings...)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Remove()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, srv.DSN("postgres"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
	}
	if *pgStat {
		if _, err := pool.Exec(ctx, "CREATE EXTENSION pg_stat_statements"); err != nil {
			log.Fatal(err)
		}
	}
	if *rows > 0 {
		if err := copyFigures(ctx, srv, pool, *rows, *batch, *rounds, *only); err != nil {
			log.Fatal(err)
		}
	}
	if *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if *pgStat {
		if err := printStatements(ctx, pool); err != nil {
			log.Fatal(err)
		}
	}
	if *planRows > 0 {
		if err := planFigure(ctx, srv, pool, *planRows); err != nil {
			log.Fatal(err)
		}
	}
}

const srcCols = "id, account, amount, note"

// variant is one way to copy src into dst.
type variant struct {
	name string
	run  func(ctx context.Context, b *bench) error
	base int // the number of the plain copy it is compared with; -1 for a plain one
}

// bench is what a copy run needs.
type bench struct {
	srv      *pgtest.Server
	pool     *pgxpool.Pool
	src, dst string
	batch    int
	runs     int
}

func copyFigures(ctx context.Context, srv *pgtest.Server, pool *pgxpool.Pool, rows, batch, rounds int, only string) error {
	b := &bench{srv: srv, pool: pool, src: "src", dst: "dst", batch: batch}
	start := time.Now()
	for _, q := range []string{
		"CREATE TABLE src (id bigint PRIMARY KEY, account int NOT NULL, amount numeric(12,2) NOT NULL, note text NOT NULL)",
		fmt.Sprintf("INSERT INTO src SELECT i * 3, i %% 9973, (i %% 100000) / 100.0, md5(i::text) FROM generate_series(1, %d) g(i)", rows),
		"VACUUM ANALYZE src",
		"CREATE TABLE dst (id bigint NOT NULL, account int NOT NULL, amount numeric(12,2) NOT NULL, note text NOT NULL)",
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			return err
		}
	}
	fmt.Printf("source: %d rows in %s; batches of %d rows; %d interleaved rounds\n\n", rows, time.Since(start).Round(time.Millisecond), batch, rounds)
	variants := []variant{
		{"plain INSERT...SELECT, 1 connection", plainInsertSelect, -1},
		{"exactly-once INSERT...SELECT (TransactRange), 1 worker, 1 split", eo(1, 1, byRange), 0},
		{"plain read + COPY, 1 connection", plainReadCopy, -1},
		{"exactly-once read + COPY (CopyInto), 1 worker, 1 split", eo(1, 1, byCopy), 2},
		{"exactly-once INSERT...SELECT (TransactRange), 1 worker, 16 splits", eo(1, 16, byRange), 0},
		{"exactly-once INSERT...SELECT (TransactRange), 4 workers, 16 splits", eo(4, 16, byRange), 0},
		{"exactly-once INSERT...SELECT (Transact, keys read), 1 worker, 1 split", eo(1, 1, byKeys), 0},
		{"exactly-once INSERT...SELECT (TransactRange), 1 worker, 1 split, no cuts", eo(1, 1, byRange|oneLane), 0},
		{"exactly-once INSERT...SELECT (TransactRange), 1 worker, 1 split, MaxInFlight 2", eo(1, 1, byRange|twoLanes), 0},
		{"exactly-once INSERT...SELECT (TransactRange), 4 workers, 16 splits, no cuts", eo(4, 16, byRange|oneLane), 0},
		{"exactly-once INSERT...SELECT (TransactRange), 4 workers, MaxInFlight 1, 4 splits, no cuts", eo(4, 4, byRange|oneLane|oneSplit), 0},
		{"one statement per batch in a transaction with a progress UPDATE (no library)", oneStatementTx, 0},
		{"plain INSERT...SELECT, 1 fresh connection", fresh(plainInsertSelect), -1},
	}
	picked := make([]int, len(variants))
	for i := range picked {
		picked[i] = i
	}
	if only != "" {
		picked = nil
		for _, f := range strings.Split(only, ",") {
			i, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || i < 0 || i >= len(variants) {
				return fmt.Errorf("-only %q: %q is not a variant number 0 to %d", only, f, len(variants)-1)
			}
			picked = append(picked, i)
		}
	}
	// The processor time of a run, this process's and the server's, is
	// the figure that holds on a loaded machine: wall times there measure
	// the other tenants too.
	cpuNow := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) + srv.CPUTime()
	}
	times := make(map[int][]time.Duration)
	cpus := make(map[int][]time.Duration)
	for r := range rounds {
		for _, i := range picked {
			v := variants[i]
			if _, err := pool.Exec(ctx, "TRUNCATE dst"); err != nil {
				return err
			}
			if _, err := pool.Exec(ctx, "CHECKPOINT"); err != nil {
				return err
			}
			t0, c0 := time.Now(), cpuNow()
			if err := v.run(ctx, b); err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			d, cpu := time.Since(t0), cpuNow()-c0
			var n, distinct int64
			if err := pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT id) FROM dst").Scan(&n, &distinct); err != nil {
				return err
			}
			if n != int64(rows) || distinct != n {
				return fmt.Errorf("%s: the sink holds %d rows (%d distinct), want %d", v.name, n, distinct, rows)
			}
			times[i] = append(times[i], d)
			cpus[i] = append(cpus[i], cpu)
			fmt.Printf("round %d  %d %-70s %8s  %9.0f rows/s  cpu %s\n", r+1, i, v.name, d.Round(time.Millisecond), float64(rows)/d.Seconds(), cpu.Round(10*time.Millisecond))
		}
	}
	fmt.Println("\nmedians (wall, throughput, processor time of this process and the server):")
	med, medCPU := map[int]time.Duration{}, map[int]time.Duration{}
	for _, i := range picked {
		med[i], medCPU[i] = median(times[i]), median(cpus[i])
		fmt.Printf("  %d %-70s %8s  %9.0f rows/s  cpu %s\n", i, variants[i].name, med[i].Round(time.Millisecond), float64(rows)/med[i].Seconds(), medCPU[i].Round(10*time.Millisecond))
	}
	fmt.Println("\nratios to the plain copy (throughput by wall medians; processor time plain/this):")
	for _, i := range picked {
		if base := variants[i].base; base >= 0 && med[base] > 0 {
			fmt.Printf("  %d / %d: %.2fx  (cpu %.2fx)\n", i, base, med[base].Seconds()/med[i].Seconds(), medCPU[base].Seconds()/medCPU[i].Seconds())
		}
	}
	// The plain copy on a connection opened for the run (freshPlain) pays
	// what the workers' new connections pay too (see fresh).
	if med[freshPlain] > 0 {
		fmt.Printf("\nratios to the plain copy on a fresh connection (%d):\n", freshPlain)
		for _, i := range picked {
			if variants[i].base == 0 {
				fmt.Printf("  %d / %d: %.2fx  (cpu %.2fx)\n", i, freshPlain, med[freshPlain].Seconds()/med[i].Seconds(), medCPU[freshPlain].Seconds()/medCPU[i].Seconds())
			}
		}
	}
	return nil
}

// freshPlain is the variant of the plain copy on a fresh connection.
const freshPlain = 12

// fresh runs copy on a pool of its own, opened for the run, as a copy
// program's process would. A server process new to the run first maps the
// shared buffers it touches: on the machine of docs/sqlscan.md's figures a
// fresh backend took about 26,000 minor page faults and 1 s more to copy
// 1,000,000 rows than the same backend's second copy (psql, 128 MB of
// shared buffers). The exactly-once workers' connections are new too,
// while the bench's own pool is warm from building the source table.
func fresh(copy func(ctx context.Context, b *bench) error) func(ctx context.Context, b *bench) error {
	return func(ctx context.Context, b *bench) error {
		pool, err := pgxpool.New(ctx, b.srv.DSN("postgres"))
		if err != nil {
			return err
		}
		defer pool.Close()
		fb := *b
		fb.pool = pool
		return copy(ctx, &fb)
	}
}

// median returns the median of ds (the upper one of an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// plainInsertSelect copies by key batches with INSERT ... SELECT on one
// connection, each batch its own statement (autocommit).
func plainInsertSelect(ctx context.Context, b *bench) error {
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	last := int64(math.MinInt64)
	for {
		var n int64
		var next sql.NullInt64
		err := conn.QueryRow(ctx, `WITH b AS (INSERT INTO dst SELECT `+srcCols+` FROM src WHERE id > $1 ORDER BY id LIMIT $2 RETURNING id)
SELECT count(*), max(id) FROM b`, last, b.batch).Scan(&n, &next)
		if err != nil {
			return err
		}
		if n < int64(b.batch) {
			return nil
		}
		last = next.Int64
	}
}

// oneStatementTx is the least an exactly-once batch whose statement
// selects its own rows could cost, without the library: on one
// connection, each batch a transaction of BEGIN, the INSERT ... SELECT
// with LIMIT returning its count and last key, an UPDATE of a one-row
// progress table to that key (in place of the fenced compare-and-swap)
// and COMMIT. No bounds read, no coordination, no fixed cost.
func oneStatementTx(ctx context.Context, b *bench) error {
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS bench_progress (id int PRIMARY KEY, last bigint NOT NULL); INSERT INTO bench_progress VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET last = 0"); err != nil {
		return err
	}
	last := int64(math.MinInt64)
	for {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		var n int64
		var next sql.NullInt64
		err = tx.QueryRow(ctx, `WITH b AS (INSERT INTO dst SELECT `+srcCols+` FROM src WHERE id > $1 ORDER BY id LIMIT $2 RETURNING id)
SELECT count(*), max(id) FROM b`, last, b.batch).Scan(&n, &next)
		if err == nil && n > 0 {
			_, err = tx.Exec(ctx, "UPDATE bench_progress SET last = $1 WHERE id = 1", next.Int64)
		}
		if err != nil {
			_ = tx.Rollback(ctx)
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		if n < int64(b.batch) {
			return nil
		}
		last = next.Int64
	}
}

// plainReadCopy reads each batch to the client and COPYs it into the sink
// on a second connection: the data path of CopyInto, without coordination.
func plainReadCopy(ctx context.Context, b *bench) error {
	db, err := sql.Open("pgx", b.srv.DSN("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	last := int64(math.MinInt64)
	for {
		rs, err := db.QueryContext(ctx, "SELECT "+srcCols+" FROM src WHERE id > $1 ORDER BY id LIMIT $2", last, b.batch)
		if err != nil {
			return err
		}
		var rows [][]any
		for rs.Next() {
			vals := make([]any, 4)
			dest := []any{&vals[0], &vals[1], &vals[2], &vals[3]}
			if err := rs.Scan(dest...); err != nil {
				return err
			}
			rows = append(rows, vals)
		}
		if err := rs.Err(); err != nil {
			return err
		}
		rs.Close()
		if len(rows) == 0 {
			return nil
		}
		if _, err := b.pool.CopyFrom(ctx, pgx.Identifier{"dst"}, []string{"id", "account", "amount", "note"}, pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		if len(rows) < b.batch {
			return nil
		}
		last = rows[len(rows)-1][0].(int64)
	}
}

// eoWrite is how an exactly-once copy writes a batch.
type eoWrite int

const (
	// byRange is TransactRange with INSERT ... SELECT between the batch's
	// first and last key: the scan reads each batch's bounds only.
	byRange eoWrite = iota
	// byKeys is the same statement under Transact: the scan reads every
	// key of the batch to the worker.
	byKeys
	// byCopy is CopyInto: the scan reads the rows, COPY writes them.
	byCopy
	// oneLane, or-ed with one of the above, turns runtime cuts off: each
	// split is read by one lane, one batch at a time. By default the
	// leader cuts a split whose worker has idle lane slots (MaxInFlight
	// 8), and one worker copies over several lanes at once.
	oneLane eoWrite = 8
	// twoLanes, or-ed with one of the above, lets a worker hold two splits
	// at once (MaxInFlight 2): a lone worker cuts its split once.
	twoLanes eoWrite = 16
	// oneSplit, or-ed with one of the above, lets a worker hold one split
	// at a time (MaxInFlight 1).
	oneSplit eoWrite = 32
)

// eo returns an exactly-once copy by workers workers over splits planned
// splits, each batch written as how says.
func eo(workers, splits int, how eoWrite) func(ctx context.Context, b *bench) error {
	return func(ctx context.Context, b *bench) error {
		b.runs++
		job := fmt.Sprintf("bench%d", b.runs)
		errs := make(chan error, workers)
		for i := range workers {
			go func() { errs <- b.worker(ctx, job, fmt.Sprintf("w%d", i), splits, how) }()
		}
		var first error
		for range workers {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		return first
	}
}

// worker runs one exactly-once copy worker of job until the job completes.
func (b *bench) worker(ctx context.Context, job, id string, splits int, how eoWrite) error {
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = id
	cfg.LeaseDuration = 3 * time.Second
	cfg.OpTimeout = time.Second
	cfg.RebalanceDelay = 0
	cfg.StartupGrace = 0
	cfg.Logger = slog.New(slog.DiscardHandler)
	if how&oneLane != 0 {
		cfg.CutInterval = -1
	}
	if how&twoLanes != 0 {
		cfg.MaxInFlight = 2
	}
	if how&oneSplit != 0 {
		cfg.MaxInFlight = 1
	}
	st, err := pgstore.New(pgstore.Config{DSN: b.srv.DSN("postgres"), Job: job}, cfg.LeaseDuration)
	if err != nil {
		return err
	}
	defer st.Close()
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		return err
	}
	c, err := actors.Spawn(engine, st, cfg)
	if err != nil {
		return err
	}
	db, err := sql.Open("pgx", b.srv.DSN("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	t := sqlscan.Table{DB: db, Name: "src", Key: "id", Kind: sqlscan.KeyInt, BatchSize: b.batch}
	insertSelect := func(ctx context.Context, tx pgx.Tx, bt *sqlscan.Batch) error {
		_, err := tx.Exec(ctx, "INSERT INTO dst SELECT "+srcCols+" FROM src WHERE id BETWEEN $1 AND $2", bt.First, bt.Last)
		return err
	}
	var h sqlscan.Handler
	switch how &^ (oneLane | twoLanes | oneSplit) {
	case byRange:
		h = sqlscan.TransactRange(c, insertSelect)
	case byKeys:
		h = sqlscan.Transact(c, insertSelect)
	case byCopy:
		t.Columns = []string{"id", "account", "amount", "note"}
		h = sqlscan.CopyInto(c, pgx.Identifier{"dst"}, t.Columns)
	}
	src, err := sqlscan.NewSource[int64](t, h, lanes.Options{Logger: cfg.Logger})
	if err != nil {
		return err
	}
	plan, err := sqlscan.Planner[int64](t, "rows", splits)
	if err != nil {
		return err
	}
	return driver.Run(ctx, c, src, driver.WithPlanner(plan))
}

// planFigure builds a table of n rows whose key density changes a
// hundredfold midway, analyzes it, and reports the planner's boundary
// queries under EXPLAIN (ANALYZE, BUFFERS) against the table's pages, and
// the split weights against the true counts.
func planFigure(ctx context.Context, srv *pgtest.Server, pool *pgxpool.Pool, n int) error {
	start := time.Now()
	half := n / 2
	for _, q := range []string{
		"CREATE TABLE big (id bigint PRIMARY KEY, v int NOT NULL)",
		fmt.Sprintf("INSERT INTO big SELECT CASE WHEN i <= %d THEN i ELSE %d + (i - %d) * 100 END, i %% 1000 FROM generate_series(1, %d) g(i)", half, half, half, n),
		"VACUUM ANALYZE big",
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			return err
		}
	}
	var pages, heap, index int64
	if err := pool.QueryRow(ctx, "SELECT relpages, pg_relation_size('big') / 8192, pg_relation_size('big_pkey') / 8192 FROM pg_class WHERE oid = 'big'::regclass").Scan(&pages, &heap, &index); err != nil {
		return err
	}
	fmt.Printf("\nplanner figure: table big, %d rows (keys 1..%d dense, then every 100th), %d heap pages, %d index pages; built in %s\n",
		n, half, heap, index, time.Since(start).Round(time.Second))
	// The planner's statements, as sqlscan.Plan runs them for an integer key.
	queries := []string{
		`SELECT c.oid::bigint, c.reltuples::float8, greatest(c.relpages::bigint, pg_relation_size(c.oid) / current_setting('block_size')::bigint) FROM pg_class c WHERE c.oid = to_regclass('big')`,
		`SELECT min(id), max(id) FROM big`,
		`SELECT unnest(h::bigint[]) FROM (SELECT s.histogram_bounds::text h FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = s.schemaname WHERE c.oid = 'big'::regclass AND s.attname = 'id' AND NOT s.inherited OFFSET 0) q`,
		fmt.Sprintf(`SELECT id FROM big TABLESAMPLE SYSTEM (%g) ORDER BY id`, max(100*10/float64(heap), 0.5)),
	}
	total := int64(0)
	for i, q := range queries {
		rows, err := pool.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+q)
		if err != nil {
			return err
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				return err
			}
			plan = append(plan, line)
		}
		rows.Close()
		label := "boundary query"
		if i == 3 {
			label = "fallback sample (a table never analyzed), not run when statistics exist"
		}
		bufs := buffersOf(plan)
		if i < 3 {
			total += bufs
		}
		fmt.Printf("\n-- %s:\n%s\n%s\n", label, q, strings.Join(plan, "\n"))
	}
	fmt.Printf("\nboundary queries with statistics: %d buffers in all (shared hit + read, catalog and index included) = %.4f%% of the table's %d heap pages\n", total, 100*float64(total)/float64(heap), heap)
	db, err := sql.Open("pgx", srv.DSN("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	splits, err := sqlscan.Plan[int64](ctx, sqlscan.Table{DB: db, Name: "big", Key: "id", Kind: sqlscan.KeyInt}, "big", 16)
	if err != nil {
		return err
	}
	fmt.Printf("\n%d splits: weight vs true count\n", len(splits))
	worst := 0.0
	for _, s := range splits {
		var count int64
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM big WHERE id >= $1 AND id < $2", s.Range.Start, s.Range.End).Scan(&count); err != nil {
			return err
		}
		dev := float64(s.Weight)/float64(max(count, 1)) - 1
		worst = max(worst, math.Abs(dev))
		fmt.Printf("  %s [%d, %d): weight %d, true %d (%+.1f%%)\n", s.ID, s.Range.Start, s.Range.End, s.Weight, count, 100*dev)
	}
	fmt.Printf("largest deviation: %.1f%%\n", 100*worst)
	return nil
}

// buffersOf sums the "Buffers: shared hit=... read=..." of a plan's top node
// (the first Buffers line: a node's counts include its children's) and the
// planning line.
func buffersOf(plan []string) int64 {
	var total int64
	seenNode := false
	for _, l := range plan {
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(t, "Buffers:") {
			continue
		}
		if seenNode && !strings.Contains(l, "Planning") {
			continue
		}
		seenNode = true
		for _, f := range strings.Fields(t) {
			for _, k := range []string{"hit=", "read="} {
				if v, ok := strings.CutPrefix(f, k); ok {
					var n int64
					fmt.Sscan(v, &n)
					total += n
				}
			}
		}
	}
	return total
}

// printStatements prints the server's ten statements of the most total
// execution time (pg_stat_statements): calls, total and mean time, rows.
func printStatements(ctx context.Context, pool *pgxpool.Pool) error {
	rows, err := pool.Query(ctx, `SELECT calls, total_exec_time, mean_exec_time, rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 150)
FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 10`)
	if err != nil {
		return fmt.Errorf("pg_stat_statements (CREATE EXTENSION runs at start with -pgstat): %w", err)
	}
	defer rows.Close()
	fmt.Println("\nthe server's statements by total time (all rounds):")
	for rows.Next() {
		var calls, n int64
		var total, mean float64
		var q string
		if err := rows.Scan(&calls, &total, &mean, &n, &q); err != nil {
			return err
		}
		fmt.Printf("  %7d calls %9.0f ms %7.2f ms/call %9d rows  %s\n", calls, total, mean, n, q)
	}
	return rows.Err()
}
