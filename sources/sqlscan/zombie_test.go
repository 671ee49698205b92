package sqlscan_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/sources/sqlscan"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/pgstore"
)

// A fenced owner lands no row. Worker A copies a table in one split; one of
// its batch writes stops inside its transaction, its rows inserted and the
// split's progress not yet compared, while another tenancy fences the
// split's progress record (what a claimant's fence writes when the split
// moved: a forced revocation, an expired lease). Then A's write goes on:
// its comparison loses and its rows roll back. A then keeps committing
// batches of the split, at its own epoch and at others: every one is
// refused, and no row of any lands.
func TestZombieLandsNoRow(t *testing.T) {
	s := pgtest.Need(t, srv)
	ctx := t.Context()
	src, dst := pgtest.UniqueName("src"), pgtest.UniqueName("dst")
	for _, q := range []string{
		"CREATE TABLE " + src + " (k bigint PRIMARY KEY, v bigint NOT NULL)",
		"INSERT INTO " + src + " SELECT i, i FROM generate_series(1, 4000) g(i)",
		"ANALYZE " + src,
		"CREATE TABLE " + dst + " (k bigint NOT NULL, v bigint NOT NULL, writer text NOT NULL)",
	} {
		if err := s.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	armed := false
	var inflight []int64 // the blocked batch's keys
	blocked, release := make(chan struct{}), make(chan struct{})
	j := &copyJob{s: s, job: pgtest.UniqueName("zombie"), splits: 1, cutEvery: -1, lease: 6 * time.Second, opTimeout: 2 * time.Second,
		tbl: sqlscan.Table{Name: src, Key: "k", Kind: sqlscan.KeyInt, Columns: []string{"k", "v"}, BatchSize: 50}}
	j.write = func(w *copyWorker) sqlscan.TxBatchFunc {
		return func(ctx context.Context, tx pgx.Tx, b *sqlscan.Batch) error {
			rows := make([][]any, len(b.Rows))
			for i, r := range b.Rows {
				rows[i] = []any{r[0], r[1], "A"}
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{dst}, []string{"k", "v", "writer"}, pgx.CopyFromRows(rows)); err != nil {
				return err
			}
			mu.Lock()
			block := armed
			armed = false
			if block {
				for _, r := range b.Rows {
					inflight = append(inflight, r[0].(int64))
				}
			}
			mu.Unlock()
			if block {
				close(blocked)
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		}
	}
	a := j.start(t, "A")
	defer a.crash()
	waitFor(t, "A landed a batch", func() bool { return count(ctx, t, s, "SELECT count(*) FROM "+dst) > 0 })
	mu.Lock()
	armed = true
	mu.Unlock()
	<-blocked // A's next batch is inside its transaction
	// Another tenancy fences the split's progress record, as a claimant does.
	split := coordination.SplitID("scan-000000")
	tbl := j.tbl
	tbl.DB = a.db
	plan, err := sqlscan.Planner[int64](tbl, "scan", 1)
	if err != nil {
		t.Fatal(err)
	}
	st, err := pgstore.New(pgstore.Config{DSN: s.DSN("postgres"), Job: j.job}, j.lease)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := protocol.ProgressKey(split)
	e, ok, err := st.Get(ctx, store.Durable, key)
	if err != nil || !ok {
		t.Fatalf("reading %s: %v %v", key, ok, err)
	}
	rec, err := protocol.DecodeProgress(key, e.Value, protocol.Fingerprint(plan.Fingerprint()))
	if err != nil {
		t.Fatal(err)
	}
	epoch := rec.Epoch
	if _, ok, err := st.Update(ctx, store.Durable, key, protocol.EncodeProgress(rec.Fence("B", epoch+1, 0)), e.Revision); err != nil || !ok {
		t.Fatalf("fencing %s: %v %v", key, ok, err)
	}
	close(release)
	// A, fenced, keeps committing batches of the split. A commit at its own
	// epoch queues behind the blocked one on the split's commit-writer
	// shard, so its Fenced answer also says the blocked one was decided.
	zombie := func(ctx context.Context, tx any) error {
		_, err := tx.(pgx.Tx).Exec(ctx, "INSERT INTO "+dst+" VALUES (-1, -1, 'zombie')")
		return err
	}
	for try := 0; ; try++ {
		err := a.c.CommitTx(split, coordination.LeaseEpoch(epoch), coordination.SplitProgress{Watermark: 1 << 40}, zombie)
		if coordination.KindOf(err) == coordination.Fenced {
			break
		}
		if err == nil || try == 10 {
			t.Fatalf("the fenced owner's CommitTx at its epoch %d returned %v; want Fenced", epoch, err)
		}
	}
	for try := range 3 {
		for _, ep := range []uint64{epoch, epoch + 1, epoch + 2} {
			if err := a.c.CommitTx(split, coordination.LeaseEpoch(ep), coordination.SplitProgress{Watermark: int64(1<<40 + try)}, zombie); coordination.KindOf(err) != coordination.Fenced {
				t.Fatalf("the fenced owner's CommitTx at epoch %d returned %v; want Fenced", ep, err)
			}
		}
	}
	if n := count(ctx, t, s, fmt.Sprintf("SELECT count(*) FROM %s WHERE k = ANY('%s'::bigint[])", dst, pgArray(inflight))); n != 0 {
		t.Errorf("the fenced owner's blocked batch landed %d of its %d rows; want 0", n, len(inflight))
	}
	if n := count(ctx, t, s, "SELECT count(*) FROM "+dst+" WHERE writer = 'zombie'"); n != 0 {
		t.Errorf("the fenced owner's later commits landed %d rows; want 0", n)
	}
	if n := count(ctx, t, s, "SELECT count(*) - count(DISTINCT k) FROM "+dst); n != 0 {
		t.Errorf("the sink holds %d duplicated rows; want 0", n)
	}
}

// waitFor polls cond every 20ms until it holds, failing t after 30s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for: %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling an explicit condition
	}
}

// count runs a count query.
func count(ctx context.Context, t *testing.T, s *pgtest.Server, q string) int64 {
	t.Helper()
	var n int64
	if err := queryRow(ctx, s, q, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// queryRow scans one row of q into dest.
func queryRow(ctx context.Context, s *pgtest.Server, q string, dest ...any) error {
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(ctx, q).Scan(dest...)
}

// pgArray renders keys as an array literal.
func pgArray(keys []int64) string {
	b := []byte("{")
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%d", k)
	}
	return string(append(b, '}'))
}
