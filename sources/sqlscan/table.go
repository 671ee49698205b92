package sqlscan

import (
	"database/sql"
	"fmt"
	"reflect"
	"strings"
)

// KeyKind is the type of a table's key column.
type KeyKind int

const (
	// KeyInt is an integer key (smallint, integer, bigint): lane offsets.
	KeyInt KeyKind = iota + 1
	// KeyText is a text key, compared bytewise (COLLATE "C" on PostgreSQL).
	KeyText
	// KeyUUID is a PostgreSQL uuid key, compared bytewise.
	KeyUUID
	// KeyBytes is a binary key (bytea, blob), compared bytewise.
	KeyBytes
)

// String names the kind as the errors do.
func (k KeyKind) String() string {
	switch k {
	case KeyInt:
		return "KeyInt"
	case KeyText:
		return "KeyText"
	case KeyUUID:
		return "KeyUUID"
	case KeyBytes:
		return "KeyBytes"
	}
	return fmt.Sprintf("KeyKind(%d)", int(k))
}

// Dialect is the SQL the scan speaks.
type Dialect int

const (
	// Detect picks the dialect from the database/sql driver's type: pgx
	// and lib/pq are Postgres, anything else Generic.
	Detect Dialect = iota
	// Postgres uses $n placeholders, COLLATE "C" text keys and the
	// statistics planner.
	Postgres
	// Generic uses ? placeholders and the generic planner (SQLite and
	// others).
	Generic
)

// Table is what a scan reads: a table, or a subquery with a key column.
type Table struct {
	// DB is the database to read.
	DB *sql.DB
	// Name is the table as SQL names it ("events", "public.events",
	// `"Events"`), or a parenthesized subquery with an alias
	// ("(SELECT ...) q"). It is inserted into the statements as is: it
	// must come from the program, never from input.
	Name string
	// Key is the key column, unique per row; as Name, SQL as is.
	Key string
	// Kind is the key's type.
	Kind KeyKind
	// Columns are the columns each row of a batch holds, in order (SQL
	// expressions as is). Empty: the key alone.
	Columns []string
	// BatchSize is the most rows a batch reads. 0 means 1000.
	BatchSize int
	// Dialect is the SQL to speak; Detect (0) picks it from DB's driver.
	Dialect Dialect
}

// check validates t and fills its defaults.
func (t Table) check() (Table, error) {
	switch {
	case t.DB == nil:
		return t, fmt.Errorf("sqlscan: Table.DB is nil; open the database with sql.Open and pass it")
	case strings.TrimSpace(t.Name) == "":
		return t, fmt.Errorf("sqlscan: Table.Name is empty; name the table to scan")
	case strings.TrimSpace(t.Key) == "":
		return t, fmt.Errorf("sqlscan: Table.Key is empty; name the table's unique key column")
	case t.Kind < KeyInt || t.Kind > KeyBytes:
		return t, fmt.Errorf("sqlscan: Table.Kind is %s; set KeyInt, KeyText, KeyUUID or KeyBytes", t.Kind)
	case t.BatchSize < 0:
		return t, fmt.Errorf("sqlscan: Table.BatchSize is %d; it must be > 0 (0 means 1000)", t.BatchSize)
	}
	if t.BatchSize == 0 {
		t.BatchSize = 1000
	}
	if t.Dialect == Detect {
		t.Dialect = Generic
		if d := driverPath(t.DB.Driver()); strings.Contains(d, "jackc/pgx") || strings.Contains(d, "lib/pq") {
			t.Dialect = Postgres
		}
	}
	if t.Kind == KeyUUID && t.Dialect != Postgres {
		return t, fmt.Errorf("sqlscan: Table.Kind KeyUUID is PostgreSQL's uuid type; on another database store the key as KeyBytes or KeyText")
	}
	return t, nil
}

// driverPath is the package path of a database/sql driver's type.
func driverPath(d any) string {
	ty := reflect.TypeOf(d)
	for ty.Kind() == reflect.Pointer {
		ty = ty.Elem()
	}
	return ty.PkgPath()
}

// keyExpr is the key as the statements compare and order it.
func (t Table) keyExpr() string {
	if t.Kind == KeyText && t.Dialect == Postgres {
		return t.Key + ` COLLATE "C"`
	}
	return t.Key
}

// arg returns the i'th placeholder (from 1).
func (t Table) arg(i int) string {
	if t.Dialect == Postgres {
		return fmt.Sprintf("$%d", i)
	}
	return "?"
}

// selectList is the key, then the columns.
func (t Table) selectList() string {
	return strings.Join(append([]string{t.Key}, t.Columns...), ", ")
}
