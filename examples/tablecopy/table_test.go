package main

import (
	"strings"
	"testing"
)

func TestDescribeTableNeedsAnIntegerKey(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   string
	}{
		{name: "missing", schema: "", want: "table t does not exist"},
		{name: "text key", schema: "CREATE TABLE t (id TEXT PRIMARY KEY, v INTEGER)", want: "column id must be its INTEGER PRIMARY KEY"},
		{name: "no key", schema: "CREATE TABLE t (id INTEGER, v INTEGER)", want: "column id must be its INTEGER PRIMARY KEY"},
		{name: "composite key", schema: "CREATE TABLE t (id INTEGER, v INTEGER, PRIMARY KEY (id, v))", want: "column id must be its INTEGER PRIMARY KEY"},
		{name: "other key", schema: "CREATE TABLE t (k INTEGER PRIMARY KEY, id INTEGER)", want: "column id must be its INTEGER PRIMARY KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, _ := openTestDB(t)
			if tt.schema != "" {
				if _, err := db.Exec(tt.schema); err != nil {
					t.Fatal(err)
				}
			}
			_, err := describeTable(t.Context(), db, "t")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("describeTable = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestCreateLikeKeepsColumnsAndKey creates a sink-like table from a source
// whose key is not its first column and checks the copy's columns.
func TestCreateLikeKeepsColumnsAndKey(t *testing.T) {
	db, _ := openTestDB(t)
	if _, err := db.Exec(`CREATE TABLE "odd ""name""" (v TEXT NOT NULL, id INTEGER PRIMARY KEY, n REAL)`); err != nil {
		t.Fatal(err)
	}
	src, err := describeTable(t.Context(), db, `odd "name"`)
	if err != nil {
		t.Fatal(err)
	}
	if got := src.columnList(); got != `"id", "v", "n"` {
		t.Fatalf("columnList = %s, want the key first", got)
	}
	if _, err := db.Exec(src.createLike("copy")); err != nil {
		t.Fatal(err)
	}
	dst, err := describeTable(t.Context(), db, "copy")
	if err != nil {
		t.Fatal(err)
	}
	dst.name = src.name
	if len(dst.columns) != len(src.columns) {
		t.Fatalf("copy has columns %v, want %v", dst.columns, src.columns)
	}
	for i := range dst.columns {
		if dst.columns[i] != src.columns[i] {
			t.Fatalf("copy has columns %v, want %v", dst.columns, src.columns)
		}
	}
}

func TestReadKeyRange(t *testing.T) {
	db, _ := openTestDB(t)
	if _, err := db.Exec("CREATE TABLE t (id INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	tb, err := describeTable(t.Context(), db, "t")
	if err != nil {
		t.Fatal(err)
	}
	if k, err := readKeyRange(t.Context(), db, tb); err != nil || !k.empty {
		t.Fatalf("empty table: %+v, %v; want empty", k, err)
	}
	if _, err := db.Exec("INSERT INTO t VALUES (-7), (3), (40)"); err != nil {
		t.Fatal(err)
	}
	if k, err := readKeyRange(t.Context(), db, tb); err != nil || k != (keyRange{min: -7, max: 40}) {
		t.Fatalf("readKeyRange = %+v, %v; want -7..40", k, err)
	}
}
