package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// plainCopy copies t into a scratch table with the same keyset pages and one
// transaction per page, but no coordinator, no watermark and no conflict
// clause: the baseline the coordinated copy is measured against. It drops
// the scratch table afterwards and returns the rows copied and the time
// taken.
func plainCopy(ctx context.Context, path string, t table, page int) (int64, time.Duration, error) {
	db, err := openDB(path, 2)
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	name := t.name + "_plain"
	if err := execAll(ctx, db, "DROP TABLE IF EXISTS "+quote(name), t.createLike(name)); err != nil {
		return 0, 0, fmt.Errorf("plain copy: %w", err)
	}
	defer func() { _ = execAll(context.WithoutCancel(ctx), db, "DROP TABLE IF EXISTS "+quote(name)) }()
	keys, err := readKeyRange(ctx, db, t)
	if err != nil || keys.empty {
		return 0, 0, err
	}
	pg, in := newPager(db, t, page), newInserter(name, t, "")
	var copied int64
	start := time.Now()
	for pos := keys.min; pos <= keys.max; {
		rows, next, err := pg.page(ctx, pos, keys.max+1)
		if err != nil {
			return copied, 0, fmt.Errorf("plain copy: %w", err)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return copied, 0, fmt.Errorf("plain copy: %w", err)
		}
		if _, err := in.insert(ctx, tx, rows); err != nil {
			return copied, 0, errors.Join(fmt.Errorf("plain copy: %w", err), rollback(tx))
		}
		if err := tx.Commit(); err != nil {
			return copied, 0, fmt.Errorf("plain copy: %w", err)
		}
		copied += int64(len(rows))
		pos = next
	}
	return copied, time.Since(start), nil
}

// execAll executes statements in order, stopping at the first error.
func execAll(ctx context.Context, db *sql.DB, stmts ...string) error {
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	return nil
}
