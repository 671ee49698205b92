package sqlscan

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/lanes"
)

// Plan divides t's key space into about n splits named prefix-000000,
// prefix-000001, ... and weighs each by its estimated row count; fewer come
// back when the statistics cannot tell more apart. The splits cover the
// whole key space the scan reads: integer splits from the key's min to its
// max + 1, byte-keyed ones from the first key to the end of the key space.
//
// On PostgreSQL it reads no table pages beyond the key's min and max (two
// index probes on an indexed key): the boundaries are the column's
// histogram bounds (pg_stats, after ANALYZE or autovacuum), the counts
// pg_class.reltuples; for a table never analyzed, a TABLESAMPLE SYSTEM
// sample of about 0.5% of its pages. A plan of one split reads no
// boundaries when the table was analyzed: it weighs reltuples. A subquery
// Name, and other databases,
// take the generic way: integer keys divide [min, max] evenly (weights by
// width), other keys are cut at ORDER BY ... LIMIT 1 OFFSET quantiles of a
// count(*) (which reads the key's index or table once).
func Plan[P lanes.Position](ctx context.Context, t Table, prefix string, n int) ([]lanes.Split[P], error) {
	t, err := t.check()
	if err != nil {
		return nil, err
	}
	if n < 1 || n > maxSplits {
		return nil, fmt.Errorf("sqlscan: Plan of %s into %d splits; ask for 1 to %d", t.Name, n, maxSplits)
	}
	var zero P
	if _, isInt := any(zero).(int64); isInt != (t.Kind == KeyInt) {
		return nil, fmt.Errorf("sqlscan: a %s key is planned by Plan[%s]", t.Kind, map[bool]string{true: "int64", false: "[]byte"}[t.Kind == KeyInt])
	}
	var est estimate
	if t.Dialect == Postgres {
		est, err = t.pgEstimate(ctx, n)
	}
	if err == nil && est.bounds == nil {
		est, err = t.genericEstimate(ctx)
	}
	if err != nil {
		return nil, err
	}
	var out any
	if t.Kind == KeyInt {
		out = est.intSplits(prefix, n)
	} else {
		out = est.keySplits(t, prefix, n)
	}
	return out.([]lanes.Split[P]), nil
}

// maxSplits bounds a plan, whose specs the plan's cursor records.
const maxSplits = 4096

// estimate is what planning learned: sorted key bounds that cut the rows
// into len(bounds)-1 buckets of about rows/(len-1) each, and the integer
// key's min and max.
type estimate struct {
	bounds   []any // positions: int64 or []byte, ascending
	rows     float64
	min, max int64
	empty    bool
}

// intSplits cuts [min, max+1) at about n-1 quantiles of the buckets,
// interpolating within a bucket.
func (e estimate) intSplits(prefix string, n int) []lanes.Split[int64] {
	if e.empty {
		return []lanes.Split[int64]{{ID: splitID(prefix, 0), Range: lanes.Range[int64]{Start: 0, End: 1}, Weight: 1}}
	}
	// b cuts [min, max+1) into buckets: the histogram's, each holding an
	// equal share of the rows, and at either edge a bucket between the
	// key's true min (or max+1) and the histogram's first (or last) bound,
	// the extremes of its sample, which holds next to nothing. Without a
	// histogram, one bucket holds every row.
	b := make([]int64, 0, len(e.bounds)+2)
	hist := make([]bool, 0, len(e.bounds)+2) // b[i] is a histogram bound
	b, hist = append(b, e.min), append(hist, false)
	for _, x := range e.bounds {
		switch v := x.(int64); {
		case v == b[len(b)-1]:
			hist[len(hist)-1] = true
		case v > b[len(b)-1] && v <= e.max:
			b, hist = append(b, v), append(hist, true)
		}
	}
	if b[len(b)-1] <= e.max {
		b, hist = append(b, e.max+1), append(hist, false)
	}
	nb := len(b) - 1
	per := e.rows / float64(max(len(e.bounds)-1, 1))
	cum := make([]float64, len(b)) // rows below b[i]
	for i := 1; i < len(b); i++ {
		w := per
		if len(e.bounds) < 2 {
			w = e.rows / float64(nb)
		} else if !hist[i-1] || !hist[i] {
			w = 0
		}
		cum[i] = cum[i-1] + w
	}
	if cum[nb] > 0 { // buckets dropped (bounds repeated, or past a max that shrank): rescale
		scale := e.rows / cum[nb]
		for i := range cum {
			cum[i] *= scale
		}
	}
	total := cum[nb]
	var splits []lanes.Split[int64]
	start, startCum := e.min, 0.0
	for j := 1; j <= n; j++ {
		end, endCum := e.max+1, total
		if j < n {
			target := total * float64(j) / float64(n)
			i := max(firstAtLeast(cum, target), 1)
			frac := 0.0
			if cum[i] > cum[i-1] {
				frac = (target - cum[i-1]) / (cum[i] - cum[i-1])
			}
			end = b[i-1] + int64(math.Round(frac*float64(b[i]-b[i-1])))
			endCum = target
		}
		if end <= start {
			continue
		}
		if end > e.max {
			end, endCum = e.max+1, total
		}
		splits = append(splits, lanes.Split[int64]{ID: splitID(prefix, len(splits)), Range: lanes.Range[int64]{Start: start, End: end}, Weight: uint64(max(math.Round(endCum-startCum), 1))})
		start, startCum = end, endCum
		if end > e.max {
			break
		}
	}
	return splits
}

// firstAtLeast returns the first i with cum[i] >= target.
func firstAtLeast(cum []float64, target float64) int {
	i, _ := slices.BinarySearch(cum, target)
	return min(i, len(cum)-1)
}

// keySplits cuts the key space at about n-1 of the bounds: the first split
// from the beginning of the key space, the last to its end.
func (e estimate) keySplits(t Table, prefix string, n int) []lanes.Split[[]byte] {
	var b [][]byte
	for _, x := range e.bounds {
		b = append(b, x.([]byte))
	}
	slices.SortFunc(b, bytes.Compare)
	b = slices.CompactFunc(b, bytes.Equal)
	nb := len(b) - 1
	if e.empty || nb < 1 {
		return []lanes.Split[[]byte]{{ID: splitID(prefix, 0), Range: lanes.Range[[]byte]{Start: nil, End: nil}, Weight: uint64(max(e.rows, 1))}}
	}
	per := e.rows / float64(nb)
	var splits []lanes.Split[[]byte]
	var start []byte
	startAt := 0
	for j := 1; j <= n; j++ {
		var end []byte
		endAt := nb
		if j < n {
			endAt = int(math.Round(float64(nb) * float64(j) / float64(n)))
			if endAt <= startAt || endAt >= nb {
				continue
			}
			end = b[endAt]
		}
		w := per * float64(endAt-startAt)
		splits = append(splits, lanes.Split[[]byte]{ID: splitID(prefix, len(splits)), Range: lanes.Range[[]byte]{Start: start, End: end}, Weight: uint64(max(math.Round(w), 1))})
		start, startAt = end, endAt
	}
	return splits
}

// splitID names the i'th split of prefix.
func splitID(prefix string, i int) coordination.SplitID {
	return coordination.SplitID(fmt.Sprintf("%s-%06d", prefix, i))
}

// pgEstimate reads the column's histogram and the table's row estimate
// from the catalog, or, without statistics, a TABLESAMPLE SYSTEM sample;
// for n = 1 split, the row estimate alone when there is one. bounds nil:
// t.Name is no table (a subquery), use the generic way.
func (t Table) pgEstimate(ctx context.Context, n int) (estimate, error) {
	var e estimate
	var oid sql.NullInt64
	var reltuples float64
	var pages int64
	err := t.DB.QueryRowContext(ctx, `SELECT c.oid::bigint, c.reltuples::float8, greatest(c.relpages::bigint, pg_relation_size(c.oid) / current_setting('block_size')::bigint)
FROM pg_class c WHERE c.oid = to_regclass($1)`, t.Name).Scan(&oid, &reltuples, &pages)
	if err == sql.ErrNoRows || err == nil && !oid.Valid {
		return e, nil
	}
	if err != nil {
		return e, fmt.Errorf("sqlscan: planning %s: reading pg_class: %w", t.Name, err)
	}
	if t.Kind == KeyInt {
		if e, err = t.minMax(ctx); err != nil || e.empty {
			return e, err
		}
	}
	if n == 1 && reltuples > 0 {
		// One split has no inner boundary: it spans the key's whole range
		// and weighs the row estimate, which the histogram would only
		// spread (and which a new backend's first read of pg_stats costs
		// some milliseconds of planning at a job's start, issue #38).
		e.bounds, e.rows = []any{}, reltuples
		return e, nil
	}
	arr := map[KeyKind]string{KeyInt: "bigint[]", KeyText: "text[]", KeyUUID: "uuid[]", KeyBytes: "bytea[]"}[t.Kind]
	// OFFSET 0 keeps the cast from running on other tables' histograms
	// before the filter.
	rows, err := t.DB.QueryContext(ctx, `SELECT unnest(h::`+arr+`) FROM (SELECT s.histogram_bounds::text h FROM pg_stats s
	JOIN pg_class c ON c.relname = s.tablename JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = s.schemaname
	WHERE c.oid = $1 AND s.attname = $2 AND NOT s.inherited OFFSET 0) q`, oid.Int64, strings.Trim(t.Key, `"`))
	if err != nil {
		return e, fmt.Errorf("sqlscan: planning %s: reading pg_stats: %w", t.Name, err)
	}
	bounds, err := t.scanKeys(rows)
	if err != nil {
		return e, err
	}
	if len(bounds) >= 2 && reltuples > 0 {
		e.bounds, e.rows = bounds, reltuples
		return e, nil
	}
	// Never analyzed: sample about 0.5% of the pages (all of a small table).
	pct := 100.0
	if pages > 2000 {
		pct = max(100*10/float64(pages), 0.5)
	}
	rows, err = t.DB.QueryContext(ctx, fmt.Sprintf("SELECT %s FROM %s TABLESAMPLE SYSTEM (%g) ORDER BY %s", t.Key, t.Name, pct, t.keyExpr()))
	if err != nil {
		return e, fmt.Errorf("sqlscan: planning %s: sampling: %w", t.Name, err)
	}
	if bounds, err = t.scanKeys(rows); err != nil {
		return e, err
	}
	e.rows = float64(len(bounds)) * 100 / pct
	if len(bounds) < 2 {
		e.empty = t.Kind != KeyInt && len(bounds) == 0
		e.bounds = []any{}
		return e, nil
	}
	e.bounds = quantiles(bounds, 200)
	return e, nil
}

// quantiles returns at most k+1 evenly spaced elements of sorted xs, the
// first and the last included.
func quantiles(xs []any, k int) []any {
	if len(xs) <= k+1 {
		return xs
	}
	out := make([]any, 0, k+1)
	for i := 0; i <= k; i++ {
		out = append(out, xs[i*(len(xs)-1)/k])
	}
	return out
}

// minMax reads an integer key's min and max.
func (t Table) minMax(ctx context.Context) (estimate, error) {
	var e estimate
	var lo, hi sql.NullInt64
	if err := t.DB.QueryRowContext(ctx, fmt.Sprintf("SELECT min(%s), max(%s) FROM %s", t.Key, t.Key, t.Name)).Scan(&lo, &hi); err != nil {
		return e, fmt.Errorf("sqlscan: planning %s: min and max of %s: %w", t.Name, t.Key, err)
	}
	if !lo.Valid {
		e.empty = true
		return e, nil
	}
	if hi.Int64 == math.MaxInt64 {
		return e, fmt.Errorf("sqlscan: planning %s: key %s holds %d, the largest int64; integer splits end one past the max key: use keys below it", t.Name, t.Key, hi.Int64)
	}
	e.min, e.max = lo.Int64, hi.Int64
	return e, nil
}

// genericEstimate: integer keys divide [min, max] evenly; other keys cut
// at OFFSET quantiles of count(*).
func (t Table) genericEstimate(ctx context.Context) (estimate, error) {
	if t.Kind == KeyInt {
		e, err := t.minMax(ctx)
		if err != nil || e.empty {
			return e, err
		}
		e.rows = float64(e.max - e.min + 1)
		e.bounds = []any{}
		return e, nil
	}
	var count int64
	if err := t.DB.QueryRowContext(ctx, "SELECT count(*) FROM "+t.Name).Scan(&count); err != nil {
		return estimate{}, fmt.Errorf("sqlscan: planning %s: count(*): %w", t.Name, err)
	}
	e := estimate{rows: float64(count), bounds: []any{}}
	if count == 0 {
		e.empty = true
		return e, nil
	}
	const k = 64
	q := fmt.Sprintf("SELECT %s FROM %s ORDER BY %s LIMIT 1 OFFSET %s", t.Key, t.Name, t.keyExpr(), t.arg(1))
	for i := 0; i <= k; i++ {
		off := int64(i) * (count - 1) / k
		rows, err := t.DB.QueryContext(ctx, q, off)
		if err != nil {
			return e, fmt.Errorf("sqlscan: planning %s: sampling at offset %d: %w", t.Name, off, err)
		}
		ks, err := t.scanKeys(rows)
		if err != nil {
			return e, err
		}
		e.bounds = append(e.bounds, ks...)
	}
	return e, nil
}

// scanKeys reads one key column from rows as positions, and closes rows.
func (t Table) scanKeys(rows *sql.Rows) ([]any, error) {
	defer rows.Close()
	var out []any
	for rows.Next() {
		var v any
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("sqlscan: planning %s: %w", t.Name, err)
		}
		if t.Kind == KeyInt {
			p, err := intPos(v)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		} else {
			p, err := bytesPos(t.Kind, v)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlscan: planning %s: %w", t.Name, err)
	}
	return out, nil
}

// Planner returns the final plan of a scan of t for driver.WithPlanner: the
// elected leader runs [Plan] once and records the splits in the plan's
// cursor, so that a later leader plans the same splits whatever the
// statistics say by then. Every worker presents the same fingerprint when
// it is given the same table, key, kind, prefix and n.
func Planner[P lanes.Position](t Table, prefix string, n int) (coordination.Planner, error) {
	t, err := t.check()
	if err != nil {
		return nil, err
	}
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d\x00%s\x00%d", t.Name, t.Key, t.Kind, prefix, n))
	return &planner[P]{t: t, prefix: prefix, n: n, fp: "sqlscan:v1:" + hex.EncodeToString(h[:12])}, nil
}

type planner[P lanes.Position] struct {
	t      Table
	prefix string
	n      int
	fp     string
}

func (p *planner[P]) Fingerprint() string { return p.fp }

func (p *planner[P]) Plan(ctx context.Context, pc coordination.PlanContext) (coordination.SplitPlan, error) {
	var specs []coordination.SplitSpec
	if len(pc.PlannerState) > 0 {
		if err := json.Unmarshal(pc.PlannerState, &specs); err != nil {
			return coordination.SplitPlan{}, coordination.Errorf(coordination.Fatal, "sqlscan: the plan's cursor does not decode: %v", err)
		}
	} else {
		splits, err := Plan[P](ctx, p.t, p.prefix, p.n)
		if err != nil {
			return coordination.SplitPlan{}, err
		}
		for _, s := range splits {
			spec, err := s.Spec()
			if err != nil {
				return coordination.SplitPlan{}, coordination.Errorf(coordination.Fatal, "sqlscan: %v", err)
			}
			specs = append(specs, spec)
		}
	}
	state, err := json.Marshal(specs)
	if err != nil {
		return coordination.SplitPlan{}, err
	}
	plan := coordination.SplitPlan{Finality: coordination.PlanFinal, PlannerState: state}
	for _, s := range specs {
		plan.Splits = append(plan.Splits, coordination.PlannedSplit{Spec: s})
	}
	return plan, nil
}
