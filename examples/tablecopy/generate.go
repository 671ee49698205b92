package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// sourceTable is the default name of the generated source table.
const sourceTable = "items"

// sourceColumns are the generated table's columns: a key, text, integers, a
// float and a nullable column, so the checksum covers every storage class
// but blobs.
const sourceColumns = `(
	id           INTEGER PRIMARY KEY,
	customer     TEXT    NOT NULL,
	amount_cents INTEGER NOT NULL,
	currency     TEXT    NOT NULL,
	score        REAL    NOT NULL,
	created_at   TEXT    NOT NULL,
	note         TEXT
)`

// idGaps are the mean gaps between consecutive ids in the runs the generator
// alternates between: dense runs (every id taken) and sparse ones (one id in
// 64), so equal-width id ranges hold very different numbers of rows and the
// planner's weights matter.
var idGaps = [...]int64{1, 64, 2, 16, 1, 32, 4, 64}

// generateAs creates table name in db with n rows whose ids are skewed: the
// row sequence is cut into len(idGaps) runs of equal row count and each run
// spaces its ids by its own mean gap. The content is a pure function of n.
func generateAs(ctx context.Context, db *sql.DB, name string, n int64) (err error) {
	if _, err := db.ExecContext(ctx, "CREATE TABLE "+quote(name)+" "+sourceColumns); err != nil {
		return fmt.Errorf("creating table %s: %w", name, err)
	}
	t, err := describeTable(ctx, db, name)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("filling %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, rollback(tx))
		}
	}()
	in := newInserter(name, t, "")
	rng := rand.New(rand.NewPCG(uint64(n), 16))
	currencies := [...]string{"EUR", "USD", "GBP", "CHF", "JPY"}
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	runLen := max(1, n/int64(len(idGaps)))
	id := int64(0)
	batch := make([][]any, 0, 1024)
	for i := range n {
		gap := idGaps[min(i/runLen, int64(len(idGaps)-1))]
		id += 1 + rng.Int64N(2*gap-1) // mean gap: gap
		var note any
		if rng.IntN(10) == 0 {
			note = fmt.Sprintf("back-order %d", rng.IntN(1000))
		}
		batch = append(batch, []any{id,
			fmt.Sprintf("customer-%05d", rng.IntN(50_000)),
			rng.Int64N(1_000_000),
			currencies[rng.IntN(len(currencies))],
			rng.Float64() * 100,
			epoch.Add(time.Duration(i) * time.Second).Format(time.RFC3339),
			note})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := in.insert(ctx, tx, batch); err != nil {
				return fmt.Errorf("filling %s: %w", name, err)
			}
			batch = batch[:0]
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("filling %s: %w", name, err)
	}
	return nil
}
