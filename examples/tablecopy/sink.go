package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// sink is the idempotent destination of the copy: a table with the source's
// columns, keyed like it, plus two bookkeeping tables in the same database:
// the watermark of every split (one past the last key copied) and per-worker
// counts of rows written and absorbed. A page's rows, its split's watermark
// and the counts change in one transaction, so the sink's watermark of a
// split is never ahead of, nor behind, the rows it holds.
type sink struct {
	db     *sql.DB // the sink database
	name   string  // the sink table
	source table   // the table being copied
	worker string  // who writes through this handle, for the counts

	rows inserter // INSERT ... ON CONFLICT DO NOTHING
}

// sinkName returns the sink table's name for source table t.
func sinkName(t table) string { return t.name + "_copy" }

// watermarkTable and statsTable name the sink's bookkeeping tables.
func watermarkTable(sinkName string) string { return sinkName + "_watermarks" }
func statsTable(sinkName string) string     { return sinkName + "_stats" }

// prepareSink creates the sink tables for t in db if they do not exist; with
// reset it drops them first (a fresh copy).
func prepareSink(ctx context.Context, db *sql.DB, t table, reset bool) error {
	name := sinkName(t)
	var stmts []string
	if reset {
		for _, n := range []string{name, watermarkTable(name), statsTable(name)} {
			stmts = append(stmts, "DROP TABLE IF EXISTS "+quote(n))
		}
	}
	stmts = append(stmts,
		t.createLike(name),
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (split TEXT PRIMARY KEY, next_id INTEGER NOT NULL)", quote(watermarkTable(name))),
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (worker TEXT PRIMARY KEY, pages INTEGER NOT NULL, rows_written INTEGER NOT NULL, rows_absorbed INTEGER NOT NULL)", quote(statsTable(name))),
	)
	if err := execAll(ctx, db, stmts...); err != nil {
		return fmt.Errorf("preparing sink %s: %w", name, err)
	}
	return nil
}

// newSink returns worker's handle on the sink of t in db (prepareSink must
// have run).
func newSink(db *sql.DB, t table, worker string) *sink {
	name := sinkName(t)
	return &sink{
		db:     db,
		name:   name,
		source: t,
		worker: worker,
		rows:   newInserter(name, t, "ON CONFLICT ("+quote(keyColumn)+") DO NOTHING"),
	}
}

// write copies one page of split in one transaction: the rows (a row whose
// key is already in the sink is absorbed, not written twice), the split's
// watermark next (raised, never lowered), and this worker's counts. It
// returns how many rows were absorbed. Safe for concurrent use.
func (s *sink) write(ctx context.Context, split string, rows [][]any, next int64) (absorbed int64, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("sink %s: %w", s.name, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("sink %s, split %s: %w", s.name, split, err), rollback(tx))
		}
	}()
	written, err := s.rows.insert(ctx, tx, rows)
	if err != nil {
		return 0, err
	}
	absorbed = int64(len(rows)) - written
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(
		"INSERT INTO %s (split, next_id) VALUES (?, ?) ON CONFLICT (split) DO UPDATE SET next_id = max(next_id, excluded.next_id)",
		quote(watermarkTable(s.name))), split, next); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(
		"INSERT INTO %s (worker, pages, rows_written, rows_absorbed) VALUES (?, 1, ?, ?) "+
			"ON CONFLICT (worker) DO UPDATE SET pages = pages + 1, rows_written = rows_written + excluded.rows_written, rows_absorbed = rows_absorbed + excluded.rows_absorbed",
		quote(statsTable(s.name))), s.worker, written, absorbed); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	return absorbed, nil
}

// watermark returns the sink's watermark of split: one past the last key
// whose page committed, and false when no page of split has committed.
func (s *sink) watermark(ctx context.Context, split string) (int64, bool, error) {
	var next int64
	err := s.db.QueryRowContext(ctx, fmt.Sprintf("SELECT next_id FROM %s WHERE split = ?", quote(watermarkTable(s.name))), split).Scan(&next)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("sink %s: reading the watermark of %s: %w", s.name, split, err)
	}
	return next, true, nil
}
