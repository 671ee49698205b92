package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// keyColumn is the column every copied table is keyed by: its INTEGER
// PRIMARY KEY, so keyset pages are b-tree range scans.
const keyColumn = "id"

// table describes a source table: its name and columns, key first.
type table struct {
	name    string
	columns []column
}

// column is one column of a table as SQLite declares it.
type column struct {
	name     string
	declType string
	notNull  bool
}

// describeTable reads the columns of name and checks that it can be copied in
// keyset pages: it must exist and have keyColumn as its INTEGER PRIMARY KEY.
func describeTable(ctx context.Context, db *sql.DB, name string) (table, error) {
	rows, err := db.QueryContext(ctx, "SELECT name, type, \"notnull\", pk FROM pragma_table_info(?)", name)
	if err != nil {
		return table{}, fmt.Errorf("table %s: reading its columns: %w", name, err)
	}
	defer rows.Close()
	t := table{name: name}
	keyOK := false
	pkCols := 0
	for rows.Next() {
		var c column
		var pk int
		if err := rows.Scan(&c.name, &c.declType, &c.notNull, &pk); err != nil {
			return table{}, fmt.Errorf("table %s: reading its columns: %w", name, err)
		}
		if pk > 0 {
			pkCols++
		}
		if c.name == keyColumn {
			keyOK = pk == 1 && strings.EqualFold(c.declType, "INTEGER")
			t.columns = append([]column{c}, t.columns...)
			continue
		}
		t.columns = append(t.columns, c)
	}
	if err := rows.Err(); err != nil {
		return table{}, fmt.Errorf("table %s: reading its columns: %w", name, err)
	}
	switch {
	case len(t.columns) == 0:
		return table{}, fmt.Errorf("table %s does not exist; create it, or run without -db to generate one", name)
	case !keyOK || pkCols != 1:
		return table{}, fmt.Errorf("table %s: column %s must be its INTEGER PRIMARY KEY (keyset pages scan it)", name, keyColumn)
	}
	return t, nil
}

// columnList renders the table's columns, quoted and comma-separated.
func (t table) columnList() string {
	names := make([]string, len(t.columns))
	for i, c := range t.columns {
		names[i] = quote(c.name)
	}
	return strings.Join(names, ", ")
}

// createLike returns a CREATE TABLE statement for a table named name with
// t's columns (key first, as INTEGER PRIMARY KEY).
func (t table) createLike(name string) string {
	defs := make([]string, len(t.columns))
	for i, c := range t.columns {
		d := quote(c.name)
		if c.declType != "" {
			d += " " + c.declType
		}
		switch {
		case i == 0:
			d += " PRIMARY KEY"
		case c.notNull:
			d += " NOT NULL"
		}
		defs[i] = d
	}
	return fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (%s)", quote(name), strings.Join(defs, ", "))
}

// keyRange is the inclusive range of keys present in a table; empty when the
// table has no rows.
type keyRange struct {
	min, max int64
	empty    bool
}

// readKeyRange reads SELECT min(id), max(id) of t.
func readKeyRange(ctx context.Context, db *sql.DB, t table) (keyRange, error) {
	var lo, hi sql.NullInt64
	q := fmt.Sprintf("SELECT min(%[1]s), max(%[1]s) FROM %[2]s", quote(keyColumn), quote(t.name))
	if err := db.QueryRowContext(ctx, q).Scan(&lo, &hi); err != nil {
		return keyRange{}, fmt.Errorf("table %s: reading its key range: %w", t.name, err)
	}
	if !lo.Valid {
		return keyRange{empty: true}, nil
	}
	return keyRange{min: lo.Int64, max: hi.Int64}, nil
}
