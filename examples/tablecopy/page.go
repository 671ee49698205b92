package main

import (
	"context"
	"database/sql"
	"fmt"
)

// pager reads a table in keyset pages: the rows of a key range in key order,
// at most limit per query, each query starting at the key after the previous
// page (WHERE id >= ? AND id < ? ORDER BY id LIMIT ?), so every page is one
// b-tree range scan however deep into the table it is.
type pager struct {
	db    *sql.DB
	t     table
	limit int
	query string
}

// newPager returns a pager over t in db with pages of limit rows.
func newPager(db *sql.DB, t table, limit int) *pager {
	return &pager{
		db:    db,
		t:     t,
		limit: limit,
		query: fmt.Sprintf("SELECT %[1]s FROM %[2]s WHERE %[3]s >= ? AND %[3]s < ? ORDER BY %[3]s LIMIT ?",
			t.columnList(), quote(t.name), quote(keyColumn)),
	}
}

// page reads the rows with from <= id < hi, at most p.limit of them, and
// returns them with the key the next page starts at: one past the last row's
// key, or hi when the range is exhausted.
func (p *pager) page(ctx context.Context, from, hi int64) (rows [][]any, next int64, err error) {
	rs, err := p.db.QueryContext(ctx, p.query, from, hi, p.limit)
	if err != nil {
		return nil, 0, fmt.Errorf("table %s: reading ids from %d: %w", p.t.name, from, err)
	}
	defer rs.Close()
	for rs.Next() {
		row := make([]any, len(p.t.columns))
		ptrs := make([]any, len(row))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, 0, fmt.Errorf("table %s: reading ids from %d: %w", p.t.name, from, err)
		}
		rows = append(rows, row)
	}
	if err := rs.Err(); err != nil {
		return nil, 0, fmt.Errorf("table %s: reading ids from %d: %w", p.t.name, from, err)
	}
	if len(rows) < p.limit {
		return rows, hi, nil
	}
	return rows, rows[len(rows)-1][0].(int64) + 1, nil
}

// count returns the number of rows with lo <= id < hi.
func (p *pager) count(ctx context.Context, lo, hi int64) (int64, error) {
	var n int64
	q := fmt.Sprintf("SELECT count(*) FROM %[1]s WHERE %[2]s >= ? AND %[2]s < ?", quote(p.t.name), quote(keyColumn))
	if err := p.db.QueryRowContext(ctx, q, lo, hi).Scan(&n); err != nil {
		return 0, fmt.Errorf("table %s: counting ids %d to %d: %w", p.t.name, lo, hi, err)
	}
	return n, nil
}
