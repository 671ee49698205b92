package sqlscan_test

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/sources/sqlscan"
)

// statements records the SQL of every statement a pgx connection runs.
type statements struct {
	mu  sync.Mutex
	sql []string
}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sql = append(s.sql, d.SQL)
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// read reports whether a recorded statement mentions what, and forgets them.
func (s *statements) read(what string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	found := slices.ContainsFunc(s.sql, func(q string) bool { return strings.Contains(q, what) })
	s.sql = nil
	return found
}

// recordingDB opens a database/sql handle on s whose statements rec
// records.
func recordingDB(t *testing.T, s *pgtest.Server, rec *statements) *sql.DB {
	t.Helper()
	cfg, err := pgx.ParseConfig(s.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tracer = rec
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// A plan of one split on an analyzed table spans the key's whole range and
// weighs the table's row estimate without reading the column's histogram
// (pg_stats): with no boundary to place, that read only costs the job's
// start. A plan of more splits reads it.
func TestPlanOfOneSplitReadsNoHistogram(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	ctx := t.Context()
	src, _ := makeTables(ctx, t, s, 0, 1000, 3) // keys 0, 3, ..., 2997
	rec := &statements{}
	tbl := sqlscan.Table{DB: recordingDB(t, s, rec), Name: src, Key: "k", Kind: sqlscan.KeyInt}
	one, err := sqlscan.Plan[int64](ctx, tbl, "p", 1)
	if err != nil {
		t.Fatal(err)
	}
	if rec.read("pg_stats") {
		t.Error("a plan of one split read the histogram (pg_stats)")
	}
	if len(one) != 1 || one[0].Range.Start != 0 || one[0].Range.End != 2998 || one[0].Weight != 1000 {
		t.Errorf("got %+v, want one split [0, 2998) of weight 1000", one)
	}
	four, err := sqlscan.Plan[int64](ctx, tbl, "p", 4)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.read("pg_stats") {
		t.Error("a plan of 4 splits did not read the histogram (pg_stats): the recorder sees nothing")
	}
	if len(four) != 4 {
		t.Errorf("got %d splits, want 4", len(four))
	}
}
