package sqlscan

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/lanes"
)

// Handler is what a lane does with each batch it claimed: [Each],
// [Transact], [TransactRange] or [CopyInto].
type Handler interface {
	handle(ctx context.Context, l laneInfo, b *Batch) error
	// boundsOnly reports whether the handler reads only a batch's First,
	// Last and Count, so that the scan need not read its rows.
	boundsOnly() bool
}

// BatchFunc processes one batch (at-least-once: [Each]).
type BatchFunc func(ctx context.Context, b *Batch) error

// Each hands every batch to fn, at least once: a batch fn processed may be
// read again after a crash or a forced move, up to one commit interval of
// them (lanes' delivery). An error from fn makes the lane read the batch
// again after a pause (lanes.Options.Retries, then poison).
func Each(fn BatchFunc) Handler { return each(fn) }

type each BatchFunc

func (e each) handle(ctx context.Context, _ laneInfo, b *Batch) error { return e(ctx, b) }

func (each) boundsOnly() bool { return false }

// TxBatchFunc writes one batch into PostgreSQL inside tx, the transaction
// that also commits the split's progress ([Transact]).
type TxBatchFunc func(ctx context.Context, tx pgx.Tx, b *Batch) error

// Transact writes every batch exactly once: fn runs in a transaction of
// the database that holds the job's pgstore schema, which also commits the
// split's progress up to the batch's last key (coordination.TxCommitter,
// run by the commit-writing actor). Both land or neither: a crash, a
// forced move or a fenced owner replays no row fn wrote, and a fenced
// owner's transaction rolls back. fn holds no fencing logic; its writes
// must go through tx only. c must be the coordinator driver.Run runs (the
// actors' coordinator on a pgstore store).
//
// A commit whose outcome is unknown (a lost reply, a restarted server) is
// retried with the same batch until it is decided, by the read-back of the
// split's progress: fn's writes land again only if the earlier attempt did
// not land (fn may run again, and its writes then roll back; a sink's
// unique constraint refusing them is no failure of fn). An error of fn
// itself is retried with the same batch too: one that comes from the
// batch (not from a lost connection, a restarting server or a timeout)
// five times at most, then the split is reported as poison.
func Transact(c coordination.Coordinator, fn TxBatchFunc) Handler {
	return &transact{c: c, fn: fn}
}

// TransactRange is [Transact] for statements that select each batch's rows
// themselves by its keys, such as
//
//	INSERT INTO sink SELECT ... FROM table WHERE key BETWEEN $1 AND $2
//
// with b.First and b.Last (a text key compared COLLATE "C" on PostgreSQL,
// as the scan compares it). The scan then reads only each batch's bounds:
// one statement per batch returns its first key, its last key and its row
// count (b.Count), counted on the server from the key's index, so the
// rows never travel to the worker; b.Rows is nil and Table.Columns is not
// read. The rows fn selects are the range's rows as they are in its
// transaction (a row inserted or deleted between the two statements is
// copied as it is then). The guarantees are Transact's.
func TransactRange(c coordination.Coordinator, fn TxBatchFunc) Handler {
	return &transact{c: c, fn: fn, bounds: true}
}

// CopyInto is [Transact] with a COPY of each batch's rows into table's
// columns (in Table.Columns' order): a table copy, exactly once.
func CopyInto(c coordination.Coordinator, table pgx.Identifier, columns []string) Handler {
	return Transact(c, func(ctx context.Context, tx pgx.Tx, b *Batch) error {
		_, err := tx.CopyFrom(ctx, table, columns, pgx.CopyFromRows(b.Rows))
		return err
	})
}

type transact struct {
	c      coordination.Coordinator
	fn     TxBatchFunc
	bounds bool // TransactRange: fn reads First, Last and Count only
}

func (t *transact) boundsOnly() bool { return t.bounds }

// fnFailures is how many failures of fn in a row poison a split.
const fnFailures = 5

func (t *transact) handle(ctx context.Context, l laneInfo, b *Batch) error {
	tc, ok := t.c.(coordination.TxCommitter)
	if !ok || t.fn == nil {
		return lanes.Poison(fmt.Errorf("sqlscan: Transact needs a coordinator that commits transactions (the actors' coordinator on pgstore) and a non-nil fn; got %T", t.c))
	}
	p := l.progress()
	failures := 0
	for attempt := 0; ; attempt++ {
		// An attempt whose CommitTx gave up waiting may still run on the
		// commit writer's goroutine (its context ended: it cannot commit),
		// so its error is handed over under a lock.
		var mu sync.Mutex
		var fnErr error
		err := tc.CommitTx(l.split, l.epoch, p, func(ctx context.Context, tx any) error {
			ptx, ok := tx.(pgx.Tx)
			if !ok {
				return fmt.Errorf("sqlscan: the store's transaction is a %T, not a pgx.Tx: Transact needs the job's store to be pgstore", tx)
			}
			err := t.fn(ctx, ptx, b)
			mu.Lock()
			fnErr = err
			mu.Unlock()
			return err
		})
		mu.Lock()
		failed := fnErr
		mu.Unlock()
		switch kind := coordination.KindOf(err); {
		case err == nil:
			return nil
		case kind == coordination.Fenced:
			// Nothing of the batch landed and the split is gone: the
			// driver closes the lane; wait for it.
			<-ctx.Done()
			return ctx.Err()
		case kind == coordination.Fatal:
			return lanes.Poison(err)
		case failed != nil && !transient(failed):
			if failures++; failures >= fnFailures {
				return lanes.Poison(fmt.Errorf("sqlscan: split %s: writing a batch failed %d times in a row: %w", l.split, failures, failed))
			}
		case !errors.As(err, new(*coordination.Error)):
			return err
		}
		select { // Retryable: the same batch again, until decided
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(retryPause(attempt)):
		}
	}
}

// transient reports whether err, from a read or from fn's statements, came
// from the connection or the server's state (a lost or terminated
// connection, a shutdown, a timeout, a serialization failure) rather than
// from the batch: those never count towards poison.
func transient(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "40", "53", "55", "57", "58":
			return true
		}
		return false
	}
	var netErr net.Error
	return errors.Is(err, driver.ErrBadConn) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		strings.Contains(err.Error(), "conn closed") || strings.Contains(err.Error(), "conn busy")
}

// retryPause returns the pause before the n'th retry of an undecided
// commit: 50ms doubling up to 2s.
func retryPause(n int) time.Duration {
	return min(50*time.Millisecond<<min(n, 6), 2*time.Second)
}
