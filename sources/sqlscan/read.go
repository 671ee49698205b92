package sqlscan

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/lanes"
)

// Batch is the rows one statement read for one lane, in key order.
type Batch struct {
	// Split is the split the lane reads.
	Split coordination.SplitID
	// Rows are the rows read, each the values of Table.Columns in order
	// (the key alone when Columns is empty), as database/sql scans them
	// into an any. Nil for a [TransactRange] handler, whose scan reads
	// the batch's bounds only.
	Rows [][]any
	// Count is the number of rows in the batch: len(Rows), or, for a
	// [TransactRange] handler, the rows the scan counted from First to
	// Last.
	Count int
	// First and Last are the keys of the first and the last row, as
	// database/sql scans them. A statement of one's own may select the
	// batch's rows by them (INSERT INTO sink SELECT ... FROM table WHERE
	// key BETWEEN $first AND $last, with [TransactRange], so that the
	// scan reads the bounds only): the batch's rows as they are then.
	First, Last any
}

// NewSource returns the lanes source of a scan of t whose lanes hand each
// batch to h: a lanes.Source[int64] for a KeyInt key, a
// lanes.Source[[]byte] for the others (P must match: a mismatch is an
// error naming the right one). Plan the splits with [Plan] and pass both
// to driver.Run.
func NewSource[P lanes.Position](t Table, h Handler, opts lanes.Options) (*lanes.Source[P], error) {
	t, err := t.check()
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("sqlscan: the Handler is nil; pass Each, Transact or CopyInto")
	}
	var zero P
	_, isInt := any(zero).(int64)
	switch {
	case isInt && t.Kind != KeyInt:
		return nil, fmt.Errorf("sqlscan: a %s key is read by NewSource[[]byte], not NewSource[int64]", t.Kind)
	case !isInt && t.Kind == KeyInt:
		return nil, fmt.Errorf("sqlscan: a KeyInt key is read by NewSource[int64], not NewSource[[]byte]")
	}
	r := &reader{t: t, h: h, bounds: h.boundsOnly()}
	r.query = t.batchQueries(r.bounds)
	var read any
	if isInt {
		read = lanes.ReadFunc[int64](r.readInts)
	} else {
		read = lanes.ReadFunc[[]byte](r.readKeys)
	}
	return lanes.NewSource(read.(lanes.ReadFunc[P]), opts), nil
}

// reader reads the lanes of one source.
type reader struct {
	t      Table
	h      Handler
	bounds bool               // the handler needs each batch's bounds only
	query  map[[2]bool]string // by (lower bound?, upper bound?)
}

// batchQueries expands the batch statement for each shape of bounds: a
// lower bound ">= $1" (the range's start) or "> $1" (after the last
// claim; both take the same argument, the operator is chosen per read),
// and an upper bound "< $2". With bounds, the statement returns one row
// (the batch's first key, its last key and its row count; none for an
// empty batch) in place of the batch's rows: the server reads the keys
// (from the key's index) and sends three values.
func (t Table) batchQueries(bounds bool) map[[2]bool]string {
	qs := map[[2]bool]string{}
	for _, lo := range []bool{false, true} {
		for _, hi := range []bool{false, true} {
			var where []string
			n := 1
			if lo {
				where = append(where, t.keyExpr()+" %s "+t.arg(n))
				n++
			}
			if hi {
				where = append(where, t.keyExpr()+" < "+t.arg(n))
				n++
			}
			list := t.selectList()
			if bounds {
				list = t.keyExpr() + " AS k"
			}
			q := "SELECT " + list + " FROM " + t.Name
			if len(where) > 0 {
				q += " WHERE " + strings.Join(where, " AND ")
			}
			q += " ORDER BY " + t.keyExpr() + " LIMIT " + t.arg(n)
			if bounds {
				q = t.boundsOf(q)
			}
			qs[[2]bool{lo, hi}] = q
		}
	}
	return qs
}

// span is what one batch statement reads: the keys after lo (op ">") or
// from it (op ">="), before hi, at most BatchSize of them; a missing
// bound is not compared.
type span struct {
	op           string
	lo, hi       any
	hasLo, hasHi bool
}

// boundsOf wraps a batch statement that selects the batch's keys as k into
// one that returns the batch's first key, its last key and its row count
// (no row when the batch is empty).
func (t Table) boundsOf(keys string) string {
	if t.Dialect == Postgres && (t.Kind == KeyUUID || t.Kind == KeyBytes) {
		// PostgreSQL has no min and max of uuid or bytea; window functions
		// cost about a third more than the aggregates (10,000 keys: 1.5ms
		// against 1.2ms). The frame is the whole batch, already in key
		// order.
		return "SELECT first_value(k) OVER w, last_value(k) OVER w, count(*) OVER w FROM (" + keys +
			") b WINDOW w AS (ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) LIMIT 1"
	}
	// A text key is k COLLATE "C" on PostgreSQL: min and max compare it so.
	return "SELECT min(k), max(k), count(*) FROM (" + keys + ") b HAVING count(*) > 0"
}

// fetch runs one batch statement over sp: the batch, Split unset, with
// Count 0 when no key is left. A failure of the connection or the
// server's state (transient) is retried here, with backoff, until ctx
// ends: a restarting server does not count towards the lane's poison.
func (r *reader) fetch(ctx context.Context, sp span) (b Batch, err error) {
	for attempt := 0; ; attempt++ {
		b, err = r.fetchOnce(ctx, sp)
		if err == nil || !transient(err) || ctx.Err() != nil {
			return b, err
		}
		select {
		case <-ctx.Done():
			return Batch{}, err
		case <-time.After(retryPause(attempt)):
		}
	}
}

// fetchOnce is one attempt of fetch.
func (r *reader) fetchOnce(ctx context.Context, sp span) (b Batch, err error) {
	q := r.query[[2]bool{sp.hasLo, sp.hasHi}]
	var args []any
	if sp.hasLo {
		q = fmt.Sprintf(q, sp.op)
		args = append(args, sp.lo)
	}
	if sp.hasHi {
		args = append(args, sp.hi)
	}
	args = append(args, r.t.BatchSize)
	rs, err := r.t.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return Batch{}, fmt.Errorf("sqlscan: reading %s: %w", r.t.Name, err)
	}
	defer rs.Close()
	if r.bounds {
		b, err = scanBounds(rs)
	} else {
		b, err = r.scanRows(rs)
	}
	if err != nil {
		return Batch{}, fmt.Errorf("sqlscan: reading %s: %w", r.t.Name, err)
	}
	return b, nil
}

// scanRows reads a batch's rows: the key, then Table.Columns.
func (r *reader) scanRows(rs *sql.Rows) (b Batch, err error) {
	width := 1 + len(r.t.Columns)
	var key any
	for rs.Next() {
		vals := make([]any, width)
		dest := make([]any, width)
		for i := range vals {
			dest[i] = &vals[i]
		}
		if err := rs.Scan(dest...); err != nil {
			return Batch{}, err
		}
		key = vals[0]
		if b.Rows == nil {
			b.First = key
		}
		if len(r.t.Columns) == 0 {
			b.Rows = append(b.Rows, vals)
		} else {
			b.Rows = append(b.Rows, vals[1:])
		}
	}
	b.Last, b.Count = key, len(b.Rows)
	return b, rs.Err()
}

// scanBounds reads a bounds statement's row: the first key, the last key
// and the row count; no row is an empty batch.
func scanBounds(rs *sql.Rows) (b Batch, err error) {
	if rs.Next() {
		var n int64
		if err := rs.Scan(&b.First, &b.Last, &n); err != nil {
			return Batch{}, err
		}
		b.Count = int(n)
	}
	return b, rs.Err()
}

// readInts reads an integer-keyed lane: batches from Next up to End.
func (r *reader) readInts(ctx context.Context, lane *lanes.Lane[int64]) error {
	next := func() (span, bool) {
		return span{op: ">=", lo: lane.Next(), hi: lane.End(), hasLo: true, hasHi: true}, true
	}
	return readLane(ctx, r, lane, next, intPos)
}

// readKeys reads a byte-keyed lane: batches after Last (or from Start) up
// to End.
func (r *reader) readKeys(ctx context.Context, lane *lanes.Lane[[]byte]) error {
	next := func() (span, bool) {
		sp := span{op: ">"}
		if last, ok := lane.Last(); ok {
			sp.lo, sp.hasLo = r.t.keyArg(last), true
		} else if start := lane.Start(); len(start) > 0 {
			lo := r.t.ceilArg(start)
			if lo.none {
				return span{}, false // no key the table can hold is in the range
			}
			sp.op, sp.lo, sp.hasLo = ">=", lo.arg, true
		}
		if end := lane.End(); len(end) > 0 {
			hi := r.t.ceilArg(end)
			sp.hi, sp.hasHi = hi.arg, !hi.none
		}
		return sp, true
	}
	pos := func(k any) ([]byte, error) { return bytesPos(r.t.Kind, k) }
	return readLane(ctx, r, lane, next, pos)
}

// readLane reads a lane batch by batch: next says what the lane reads
// from its state now (false: nothing), pos turns a key into the lane's
// position. Each batch's last key is claimed, then the batch is handed to
// the handler while the next batch's statement runs (a prefetch, read
// from the lane's state just after the claim), so that the handler's
// commit and the next read overlap. A batch shorter than BatchSize ends
// the range; a refused claim ends the read (the kit calls the read
// function again after a runtime cut, with the new end); so does the
// handler's error.
func readLane[P lanes.Position](ctx context.Context, r *reader, lane *lanes.Lane[P], next func() (span, bool), pos func(any) (P, error)) error {
	sp, ok := next()
	if !ok {
		return nil
	}
	b, err := r.fetch(ctx, sp)
	for {
		if err != nil || b.Count == 0 {
			return err
		}
		last, perr := pos(b.Last)
		if perr != nil {
			return lanes.Poison(perr)
		}
		if !lane.Claim(last) {
			return nil
		}
		b.Split = lane.Split()
		var ahead *prefetch
		if b.Count == r.t.BatchSize {
			if sp, ok := next(); ok {
				ahead = r.prefetch(ctx, sp)
			}
		}
		if herr := r.h.handle(ctx, laneOf(lane), &b); herr != nil {
			ahead.stop()
			return herr
		}
		if ahead == nil {
			return nil
		}
		b, err = ahead.wait()
	}
}

// laneInfo is what a handler needs of a lane, whatever its position type.
type laneInfo struct {
	split    coordination.SplitID
	epoch    coordination.LeaseEpoch
	progress func() coordination.SplitProgress
}

// laneOf returns l's laneInfo.
func laneOf[P lanes.Position](l *lanes.Lane[P]) laneInfo {
	return laneInfo{split: l.Split(), epoch: l.Epoch(), progress: l.Progress}
}
