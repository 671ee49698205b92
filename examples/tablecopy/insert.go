package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// rowsPerInsert is how many rows one INSERT statement carries: multi-row
// VALUES lists cut the per-statement overhead that dominates SQLite writes.
const rowsPerInsert = 64

// inserter writes rows into one table with multi-row INSERT statements.
type inserter struct {
	head, tail string // "INSERT INTO t (cols) VALUES" and what follows the values
	width      int    // values per row
}

// newInserter returns an inserter into table name with t's columns; tail
// follows the VALUES list (for example an ON CONFLICT clause) and may be "".
func newInserter(name string, t table, tail string) inserter {
	return inserter{
		head:  fmt.Sprintf("INSERT INTO %s (%s) VALUES ", quote(name), t.columnList()),
		tail:  tail,
		width: len(t.columns),
	}
}

// statement renders the INSERT of n rows.
func (in inserter) statement(n int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", in.width), ", ") + ")"
	return in.head + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ") + " " + in.tail
}

// insert writes rows in tx and returns how many rows the statements changed
// (fewer than len(rows) when a conflict clause skipped some).
func (in inserter) insert(ctx context.Context, tx *sql.Tx, rows [][]any) (int64, error) {
	var changed int64
	var full *sql.Stmt
	defer func() {
		if full != nil {
			_ = full.Close()
		}
	}()
	args := make([]any, 0, rowsPerInsert*in.width)
	for start := 0; start < len(rows); start += rowsPerInsert {
		chunk := rows[start:min(start+rowsPerInsert, len(rows))]
		args = args[:0]
		for _, r := range chunk {
			args = append(args, r...)
		}
		var res sql.Result
		var err error
		switch {
		case len(chunk) < rowsPerInsert:
			res, err = tx.ExecContext(ctx, in.statement(len(chunk)), args...)
		default:
			if full == nil {
				if full, err = tx.PrepareContext(ctx, in.statement(rowsPerInsert)); err != nil {
					return changed, err
				}
			}
			res, err = full.ExecContext(ctx, args...)
		}
		if err != nil {
			return changed, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return changed, err
		}
		changed += n
	}
	return changed, nil
}
