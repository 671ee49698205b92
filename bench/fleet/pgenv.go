package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/pgstore"
)

// Store kinds of -store.
const (
	storeNATS     = "nats"
	storePostgres = "postgres"
)

// pgEnv is a throwaway PostgreSQL server (internal/pgtest: initdb in a
// temporary directory, 127.0.0.1, default durability settings) and one raw
// pool for the baselines, the server's statistics and removing a figure's
// schema.
type pgEnv struct {
	srv  *pgtest.Server
	pool *pgxpool.Pool
}

// startPG starts the server and opens the raw pool.
func startPG() (*pgEnv, error) {
	srv, err := pgtest.Start()
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.New(context.Background(), srv.DSN("postgres"))
	if err != nil {
		srv.Remove()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return &pgEnv{srv: srv, pool: pool}, nil
}

// store returns a pgstore for job with a pool of its own.
func (p *pgEnv) store(job string, lease time.Duration) (store.Store, error) {
	return pgstore.New(pgstore.Config{DSN: p.srv.DSN("postgres"), Job: job}, lease)
}

// pgTable is rawKV on a plain table: one row rewritten by
// UPDATE ... WHERE rev = $1, one round trip, nothing else.
type pgTable struct {
	pool  *pgxpool.Pool
	table string // quoted
}

func (t pgTable) create(ctx context.Context, val []byte) (uint64, error) {
	_, err := t.pool.Exec(ctx, "INSERT INTO "+t.table+" (k, v, rev) VALUES ('raw', $1, 1)", val)
	return 1, err
}

func (t pgTable) update(ctx context.Context, val []byte, rev uint64) (uint64, error) {
	var next int64
	err := t.pool.QueryRow(ctx, "UPDATE "+t.table+" SET v = $1, rev = rev + 1 WHERE k = 'raw' AND rev = $2 RETURNING rev", val, int64(rev)).Scan(&next)
	return uint64(next), err
}

func (pgTable) name() string { return "raw UPDATE ... WHERE rev = $1" }

// rawTable creates table name for F5's baseline.
func (p *pgEnv) rawTable(ctx context.Context, name string) (rawKV, error) {
	t := pgTable{pool: p.pool, table: pgx.Identifier{name}.Sanitize()}
	if _, err := p.pool.Exec(ctx, "CREATE TABLE "+t.table+" (k text PRIMARY KEY, v bytea NOT NULL, rev bigint NOT NULL)"); err != nil {
		return nil, fmt.Errorf("raw table %s: %w", name, err)
	}
	return t, nil
}

// drop removes job's schema and the raw tables named.
func (p *pgEnv) drop(ctx context.Context, job string, raw ...string) error {
	if _, err := p.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{"coordination_" + job}.Sanitize()+" CASCADE"); err != nil {
		return fmt.Errorf("dropping job %s: %w", job, err)
	}
	for _, t := range raw {
		if _, err := p.pool.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{t}.Sanitize()); err != nil {
			return fmt.Errorf("dropping table %s: %w", t, err)
		}
	}
	return nil
}

// rowStats are the rows written and removed in a job's tables, from the
// server's statistics (pg_stat_user_tables).
type rowStats struct {
	written, removed int64 // inserted + updated; deleted
}

func (r rowStats) sub(o rowStats) rowStats {
	return rowStats{written: r.written - o.written, removed: r.removed - o.removed}
}

// rows reads the row counters of job's schema. The server flushes its
// statistics about once a second, so a reading may lag by that much.
func (p *pgEnv) rows(ctx context.Context, job string) (rowStats, error) {
	var r rowStats
	err := p.pool.QueryRow(ctx, `SELECT coalesce(sum(n_tup_ins + n_tup_upd), 0), coalesce(sum(n_tup_del), 0)
FROM pg_stat_user_tables WHERE schemaname = $1`, "coordination_"+job).Scan(&r.written, &r.removed)
	return r, err
}

// close closes the pool and removes the server.
func (p *pgEnv) close() {
	p.pool.Close()
	p.srv.Remove()
}
