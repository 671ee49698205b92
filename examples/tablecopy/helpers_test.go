package main

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/spate-go/coordination/internal/examplekit/exampletest"
)

// waitFor bounds how long a test waits for something that should happen
// quickly; it only limits a failing test.
const waitFor = exampletest.WaitFor

// openTestDB opens a fresh database file in a temporary directory, closed at
// cleanup.
func openTestDB(t testing.TB) (*sql.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := openDB(path, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db, path
}

// generatedTable opens a fresh database holding a generated source table of
// n rows and returns it with the table's description.
func generatedTable(t testing.TB, n int64) (*sql.DB, table) {
	t.Helper()
	db, _ := openTestDB(t)
	if err := generateAs(t.Context(), db, sourceTable, n); err != nil {
		t.Fatal(err)
	}
	tb, err := describeTable(t.Context(), db, sourceTable)
	if err != nil {
		t.Fatal(err)
	}
	return db, tb
}
