package sqlscan

import (
	"context"
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
	// into an any.
	Rows [][]any
	// First and Last are the keys of the first and the last row, as
	// database/sql scans them. A statement of one's own may select the
	// batch's rows by them (INSERT INTO sink SELECT ... FROM table WHERE
	// key BETWEEN $first AND $last, with Table.Columns left empty so that
	// the scan reads keys only): the batch's rows as they are then.
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
	r := &reader{t: t, h: h, query: t.batchQueries()}
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
	t     Table
	h     Handler
	query map[[2]bool]string // by (lower bound?, upper bound?)
}

// batchQueries expands the batch statement for each shape of bounds: a
// lower bound ">= $1" (the range's start) or "> $1" (after the last
// claim; both take the same argument, the operator is chosen per read),
// and an upper bound "< $2".
func (t Table) batchQueries() map[[2]bool]string {
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
			q := "SELECT " + t.selectList() + " FROM " + t.Name
			if len(where) > 0 {
				q += " WHERE " + strings.Join(where, " AND ")
			}
			qs[[2]bool{lo, hi}] = q + " ORDER BY " + t.keyExpr() + " LIMIT " + t.arg(n)
		}
	}
	return qs
}

// fetch runs one batch statement: keys after lo (op ">" or ">="; nil: no
// lower bound), before hi (nil: none), at most BatchSize rows. A failure of
// the connection or the server's state (transient) is retried here, with
// backoff, until ctx ends: a restarting server does not count towards the
// lane's poison.
func (r *reader) fetch(ctx context.Context, op string, lo, hi any, hasLo, hasHi bool) (rows [][]any, keys []any, err error) {
	for attempt := 0; ; attempt++ {
		rows, keys, err = r.fetchOnce(ctx, op, lo, hi, hasLo, hasHi)
		if err == nil || !transient(err) || ctx.Err() != nil {
			return rows, keys, err
		}
		select {
		case <-ctx.Done():
			return nil, nil, err
		case <-time.After(retryPause(attempt)):
		}
	}
}

// fetchOnce is one attempt of fetch.
func (r *reader) fetchOnce(ctx context.Context, op string, lo, hi any, hasLo, hasHi bool) (rows [][]any, keys []any, err error) {
	q := r.query[[2]bool{hasLo, hasHi}]
	var args []any
	if hasLo {
		q = fmt.Sprintf(q, op)
		args = append(args, lo)
	}
	if hasHi {
		args = append(args, hi)
	}
	args = append(args, r.t.BatchSize)
	rs, err := r.t.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlscan: reading %s: %w", r.t.Name, err)
	}
	defer rs.Close()
	width := 1 + len(r.t.Columns)
	for rs.Next() {
		vals := make([]any, width)
		dest := make([]any, width)
		for i := range vals {
			dest[i] = &vals[i]
		}
		if err := rs.Scan(dest...); err != nil {
			return nil, nil, fmt.Errorf("sqlscan: reading %s: %w", r.t.Name, err)
		}
		keys = append(keys, vals[0])
		if len(r.t.Columns) == 0 {
			rows = append(rows, vals)
		} else {
			rows = append(rows, vals[1:])
		}
	}
	if err := rs.Err(); err != nil {
		return nil, nil, fmt.Errorf("sqlscan: reading %s: %w", r.t.Name, err)
	}
	return rows, keys, nil
}

// readInts reads an integer-keyed lane: batches from Next up to End.
func (r *reader) readInts(ctx context.Context, lane *lanes.Lane[int64]) error {
	for {
		rows, keys, err := r.fetch(ctx, ">=", lane.Next(), lane.End(), true, true)
		if more, err := claimAndHandle(ctx, r, lane, rows, keys, err, intPos); !more {
			return err
		}
	}
}

// readKeys reads a byte-keyed lane: batches after Last (or from Start) up
// to End.
func (r *reader) readKeys(ctx context.Context, lane *lanes.Lane[[]byte]) error {
	for {
		var lo bound
		op := ">"
		if last, ok := lane.Last(); ok {
			lo = bound{arg: r.t.keyArg(last)}
		} else if start := lane.Start(); len(start) > 0 {
			op, lo = ">=", r.t.ceilArg(start)
			if lo.none {
				return nil // no key the table can hold is in the range
			}
		} else {
			lo.none = true
		}
		hi := bound{none: true}
		if end := lane.End(); len(end) > 0 {
			hi = r.t.ceilArg(end)
		}
		rows, keys, err := r.fetch(ctx, op, lo.arg, hi.arg, !lo.none, !hi.none)
		pos := func(k any) ([]byte, error) { return bytesPos(r.t.Kind, k) }
		if more, err := claimAndHandle(ctx, r, lane, rows, keys, err, pos); !more {
			return err
		}
	}
}

// claimAndHandle ends a lane's read of one fetched batch: it claims the
// batch's last key (pos turns it into the lane's position) and hands the
// batch to the handler. more is true when the lane reads on: the fetch
// failed nothing, the batch was full, the claim held and the handler took
// it; otherwise err is what the read function returns (nil at the end of
// the range or a refused claim).
func claimAndHandle[P lanes.Position](ctx context.Context, r *reader, lane *lanes.Lane[P], rows [][]any, keys []any, err error, pos func(any) (P, error)) (more bool, _ error) {
	if err != nil || len(rows) == 0 {
		return false, err
	}
	last, err := pos(keys[len(keys)-1])
	if err != nil {
		return false, lanes.Poison(err)
	}
	if !lane.Claim(last) {
		return false, nil
	}
	if err := r.h.handle(ctx, laneOf(lane), &Batch{Split: lane.Split(), Rows: rows, First: keys[0], Last: keys[len(keys)-1]}); err != nil {
		return false, err
	}
	return len(rows) == r.t.BatchSize, nil
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
