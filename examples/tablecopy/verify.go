package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// tableSum is a table's row count and checksum: the sum of every row's
// hashFunc over all its columns, independent of row order.
type tableSum struct {
	Rows     int64
	Checksum int64
}

// String renders the sum as "N rows, checksum 0x...".
func (s tableSum) String() string { return fmt.Sprintf("%d rows, checksum %#x", s.Rows, s.Checksum) }

// verdict is the end-of-job check of the sink against the source, all of it
// computed by SQL on the two tables.
type verdict struct {
	Source, Sink tableSum
	// Missing, Extra and Differing count source rows absent from the sink,
	// sink rows absent from the source, and rows present in both with other
	// values; they are computed only when the sums differ.
	Missing, Extra, Differing int64
	// Pages and Absorbed are the sink's own counts over all workers:
	// committed page transactions, and rows whose key was already there
	// (duplicates that ON CONFLICT DO NOTHING absorbed).
	Pages, Absorbed int64
	// Written is the number of rows each worker inserted, by instance id.
	Written map[string]int64
}

// equal reports whether the sink holds exactly the source's rows.
func (v verdict) equal() bool {
	return v.Source == v.Sink && v.Missing == 0 && v.Extra == 0 && v.Differing == 0
}

// verify compares the sink of t with t in db.
func verify(ctx context.Context, db *sql.DB, t table) (verdict, error) {
	var v verdict
	var err error
	name := sinkName(t)
	if v.Source, err = sumTable(ctx, db, t.name, t); err != nil {
		return v, err
	}
	if v.Sink, err = sumTable(ctx, db, name, t); err != nil {
		return v, err
	}
	if err := readCounts(ctx, db, name, &v); err != nil {
		return v, err
	}
	if v.Source == v.Sink {
		return v, nil
	}
	key := quote(keyColumn)
	diffs := []struct {
		n *int64
		q string
	}{
		{&v.Missing, fmt.Sprintf("SELECT count(*) FROM %s s WHERE NOT EXISTS (SELECT 1 FROM %s d WHERE d.%s = s.%[3]s)", quote(t.name), quote(name), key)},
		{&v.Extra, fmt.Sprintf("SELECT count(*) FROM %s d WHERE NOT EXISTS (SELECT 1 FROM %s s WHERE s.%s = d.%[3]s)", quote(name), quote(t.name), key)},
		{&v.Differing, fmt.Sprintf("SELECT count(*) FROM %s s JOIN %s d ON d.%s = s.%[3]s WHERE %s != %s", quote(t.name), quote(name), key,
			hashOf("s", t), hashOf("d", t))},
	}
	for _, d := range diffs {
		if err := db.QueryRowContext(ctx, d.q).Scan(d.n); err != nil {
			return v, fmt.Errorf("comparing %s with %s: %w", name, t.name, err)
		}
	}
	return v, nil
}

// readCounts adds the sink's per-worker counts to v.
func readCounts(ctx context.Context, db *sql.DB, sink string, v *verdict) error {
	rows, err := db.QueryContext(ctx, fmt.Sprintf("SELECT worker, pages, rows_written, rows_absorbed FROM %s", quote(statsTable(sink))))
	if err != nil {
		return fmt.Errorf("sink %s: reading its counts: %w", sink, err)
	}
	defer rows.Close()
	v.Written = make(map[string]int64)
	for rows.Next() {
		var worker string
		var pages, written, absorbed int64
		if err := rows.Scan(&worker, &pages, &written, &absorbed); err != nil {
			return fmt.Errorf("sink %s: reading its counts: %w", sink, err)
		}
		v.Pages += pages
		v.Absorbed += absorbed
		v.Written[worker] = written
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sink %s: reading its counts: %w", sink, err)
	}
	return nil
}

// sumTable returns the tableSum of the table name, which has t's columns.
func sumTable(ctx context.Context, db *sql.DB, name string, t table) (tableSum, error) {
	var s tableSum
	q := fmt.Sprintf("SELECT count(*), coalesce(sum(%s), 0) FROM %s", hashOf("", t), quote(name))
	if err := db.QueryRowContext(ctx, q).Scan(&s.Rows, &s.Checksum); err != nil {
		return s, fmt.Errorf("table %s: summing its rows: %w", name, err)
	}
	return s, nil
}

// hashOf renders hashFunc over t's columns, qualified by alias unless it is
// empty.
func hashOf(alias string, t table) string {
	cols := make([]string, len(t.columns))
	for i, c := range t.columns {
		cols[i] = quote(c.name)
		if alias != "" {
			cols[i] = alias + "." + cols[i]
		}
	}
	return hashFunc + "(" + strings.Join(cols, ", ") + ")"
}
