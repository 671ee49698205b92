package sqlscan_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	_ "modernc.org/sqlite"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/lanes"
	"github.com/spate-go/coordination/sources/sqlscan"
	"github.com/spate-go/coordination/store/memstore"
)

// A scan of SQLite tables (the generic dialect and planner), one worker,
// at-least-once (Each): every row is delivered, for integer keys with gaps
// and for text and binary keys.
func TestScanSQLite(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	for _, q := range []string{
		"CREATE TABLE ints (id INTEGER PRIMARY KEY, v TEXT)",
		"CREATE TABLE texts (k TEXT PRIMARY KEY, v TEXT)",
		"CREATE TABLE blobs (k BLOB PRIMARY KEY, v TEXT)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	const n = 2000
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id := int64(i*7 - 3000) // gaps and negative keys
		k := fmt.Sprintf("k%05d-é", i*13%n)
		if _, err := tx.ExecContext(ctx, "INSERT INTO ints VALUES (?, ?)", id, k); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO texts VALUES (?, ?)", k, k); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO blobs VALUES (?, ?)", []byte{byte(i), byte(i >> 8), 0xff}, k); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	t.Run("int", func(t *testing.T) {
		scanAll[int64](t, sqlscan.Table{DB: db, Name: "ints", Key: "id", Kind: sqlscan.KeyInt, Columns: []string{"v"}, BatchSize: 64}, n)
	})
	t.Run("text", func(t *testing.T) {
		scanAll[[]byte](t, sqlscan.Table{DB: db, Name: "texts", Key: "k", Kind: sqlscan.KeyText, Columns: []string{"v"}, BatchSize: 64}, n)
	})
	t.Run("bytes", func(t *testing.T) {
		scanAll[[]byte](t, sqlscan.Table{DB: db, Name: "blobs", Key: "k", Kind: sqlscan.KeyBytes, Columns: []string{"v"}, BatchSize: 64}, n)
	})
}

// scanAll runs one worker over tbl and checks that it delivered want
// distinct rows (by their v column), each at least once.
func scanAll[P lanes.Position](t *testing.T, tbl sqlscan.Table, want int) {
	var mu sync.Mutex
	seen := map[string]int{}
	src, err := sqlscan.NewSource[P](tbl, sqlscan.Each(func(_ context.Context, b *sqlscan.Batch) error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range b.Rows {
			seen[fmt.Sprint(r[0])]++
		}
		return nil
	}), lanes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sqlscan.Planner[P](tbl, "s", 8)
	if err != nil {
		t.Fatal(err)
	}
	c := memWorker(t, "w1")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := driver.Run(ctx, c, src, driver.WithPlanner(plan)); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(seen) != want {
		t.Fatalf("delivered %d distinct rows, want %d", len(seen), want)
	}
}

// memWorker spawns a coordinator on a memstore of its own.
func memWorker(t *testing.T, name string) coordination.Coordinator {
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = name
	cfg.Logger = slog.New(slog.DiscardHandler)
	st := memstore.New(cfg.LeaseDuration)
	t.Cleanup(func() { _ = st.Close() })
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	c, err := actors.Spawn(e, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
