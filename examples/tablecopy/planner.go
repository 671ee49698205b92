package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/spate-go/coordination"
)

// idRange is a half-open range [Lo, Hi) of keys: one split's share of the
// table. JSON-encoded with the table's name it is the split's descriptor, so
// a worker that never saw the plan reads the split from its spec alone.
type idRange struct {
	Table string `json:"table"`
	Lo    int64  `json:"lo"`
	Hi    int64  `json:"hi"`
}

// String renders the range as "[lo, hi)".
func (r idRange) String() string { return fmt.Sprintf("[%d, %d)", r.Lo, r.Hi) }

// decodeRange decodes a split descriptor and checks it names table.
func decodeRange(split coordination.SplitID, desc []byte, table string) (idRange, error) {
	var r idRange
	if err := json.Unmarshal(desc, &r); err != nil {
		return idRange{}, fmt.Errorf("split %s: descriptor is not an id range: %w", split, err)
	}
	switch {
	case r.Table != table:
		return idRange{}, fmt.Errorf("split %s: descriptor names table %q, this worker copies %q; give every worker the same -table", split, r.Table, table)
	case r.Hi < r.Lo:
		return idRange{}, fmt.Errorf("split %s: descriptor range %s is inverted", split, r)
	}
	return r, nil
}

// encodeRange renders r as a split descriptor.
func encodeRange(r idRange) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // a string and two int64 fields always marshal
	}
	return b
}

// planner cuts a table's key range into splits equal in key width and
// weights each by its row count, which a skewed key distribution makes very
// uneven. It runs only on the leader; every worker builds the same planner
// (same table, key range and split count), so fingerprints agree.
type planner struct {
	db     *sql.DB
	table  table
	keys   keyRange
	splits int
}

// Fingerprint identifies the job: table, key range and split count.
func (p planner) Fingerprint() string {
	return fmt.Sprintf("tablecopy:v1:%s:%d:%d:%d", p.table.name, p.keys.min, p.keys.max, p.splits)
}

// Plan counts the rows of every range in one grouped scan of the key (the
// weights; estimates, since the table may change after planning) and returns
// the final plan.
func (p planner) Plan(ctx context.Context, _ coordination.PlanContext) (coordination.SplitPlan, error) {
	ranges := cutRange(p.table.name, p.keys, p.splits)
	counts, err := countRows(ctx, p.db, p.table, p.keys, ranges)
	if err != nil {
		return coordination.SplitPlan{}, err
	}
	plan := coordination.SplitPlan{Finality: coordination.PlanFinal}
	for i, r := range ranges {
		desc := encodeRange(r)
		plan.Splits = append(plan.Splits, coordination.PlannedSplit{Spec: coordination.SplitSpec{
			ID:         splitID(i, len(ranges)),
			Descriptor: desc,
			Weight:     uint64(max(1, counts[i])),
		}})
	}
	return plan, nil
}

// splitID names the i-th of n splits, zero-padded so ids sort in key order.
func splitID(i, n int) coordination.SplitID {
	return coordination.SplitID(fmt.Sprintf("ids-%0*d", len(fmt.Sprint(max(n-1, 0))), i))
}

// cutRange cuts keys into at most n ranges of equal width (the last may be
// narrower) that together cover [keys.min, keys.max+1) exactly. An empty
// table gets one empty range, so the job still has a split to complete.
func cutRange(name string, keys keyRange, n int) []idRange {
	if keys.empty {
		return []idRange{{Table: name}}
	}
	end := keys.max + 1
	width := (end - keys.min + int64(n) - 1) / int64(n)
	var out []idRange
	for lo := keys.min; lo < end; lo += width {
		out = append(out, idRange{Table: name, Lo: lo, Hi: min(lo+width, end)})
	}
	return out
}

// countRows returns the number of rows of t in each of ranges, which must be
// cutRange's output for keys (equal widths from keys.min).
func countRows(ctx context.Context, db *sql.DB, t table, keys keyRange, ranges []idRange) ([]int64, error) {
	counts := make([]int64, len(ranges))
	if keys.empty {
		return counts, nil
	}
	width := ranges[0].Hi - ranges[0].Lo
	q := fmt.Sprintf("SELECT (%[1]s - ?) / ?, count(*) FROM %[2]s GROUP BY 1", quote(keyColumn), quote(t.name))
	rows, err := db.QueryContext(ctx, q, keys.min, width)
	if err != nil {
		return nil, fmt.Errorf("table %s: counting rows per split: %w", t.name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var bucket, n int64
		if err := rows.Scan(&bucket, &n); err != nil {
			return nil, fmt.Errorf("table %s: counting rows per split: %w", t.name, err)
		}
		if bucket < 0 || bucket >= int64(len(counts)) {
			continue // a row inserted outside the planned key range: not part of this job
		}
		counts[bucket] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("table %s: counting rows per split: %w", t.name, err)
	}
	return counts, nil
}
