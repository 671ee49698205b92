package sqlscan_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/sources/sqlscan"
)

// keyKinds are the key columns the tests draw: SQL type, key kind, and the
// SQL expression of row i's key.
var keyKinds = []struct {
	typ  string
	kind sqlscan.KeyKind
	expr string // of i, a bigint
}{
	{"bigint", sqlscan.KeyInt, "i"},
	{"text", sqlscan.KeyText, "md5(i::text) || 'é'"},
	{"uuid", sqlscan.KeyUUID, "md5(i::text)::uuid"},
	{"bytea", sqlscan.KeyBytes, "decode(md5(i::text), 'hex')"},
}

// makeTables creates source table src with the keys of rows i*step for i
// in [0, n) (a step above 1 leaves gaps) of key kind kk, and its empty
// sink dst with no key constraint, so that duplicates show.
func makeTables(ctx context.Context, t testing.TB, s *pgtest.Server, kk int, n, step int) (src, dst string) {
	t.Helper()
	src, dst = pgtest.UniqueName("src"), pgtest.UniqueName("dst")
	k := keyKinds[kk]
	setup := strings.Join([]string{
		fmt.Sprintf("CREATE TABLE %s (k %s PRIMARY KEY, v bigint NOT NULL)", src, k.typ),
		fmt.Sprintf("INSERT INTO %s SELECT %s, i FROM generate_series(0, %d) g(i) WHERE i %% %d = 0", src, k.expr, (n-1)*step, step),
		fmt.Sprintf("ANALYZE %s", src),
		fmt.Sprintf("CREATE TABLE %s (k %s NOT NULL, v bigint NOT NULL)", dst, k.typ),
	}, "; ")
	// One implicit transaction, retried through another schedule's server
	// restart: a retry of one that landed finds the table (42P07).
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := s.Exec(ctx, setup)
		var pgErr *pgconn.PgError
		if err == nil || errors.As(err, &pgErr) && pgErr.Code == "42P07" {
			return src, dst
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // the server restarts
	}
}

// Two workers copy each key kind's table exactly once, with nothing going
// wrong: the baseline of the fault schedules. Each kind is copied twice:
// by Transact with a COPY of the rows the scan read, and by TransactRange
// with an INSERT ... SELECT between the bounds the scan read.
func TestCopyExactlyOnce(t *testing.T) {
	s := pgtest.Need(t, srv)
	for kk, k := range keyKinds {
		for _, byRange := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/range=%v", k.typ, byRange), func(t *testing.T) { copyOnce(t, s, kk, byRange) })
		}
	}
}

// copyOnce is one case of TestCopyExactlyOnce.
func copyOnce(t *testing.T, s *pgtest.Server, kk int, byRange bool) {
	ctx := t.Context()
	src, dst := makeTables(ctx, t, s, kk, 3000, 3)
	j := &copyJob{s: s, job: pgtest.UniqueName("copy"), dst: dst, columns: []string{"k", "v"}, splits: 6, byRange: byRange,
		tbl: sqlscan.Table{Name: src, Key: "k", Kind: keyKinds[kk].kind, Columns: []string{"k", "v"}, BatchSize: 100}}
	ws := []*copyWorker{j.start(t, "w1"), j.start(t, "w2")}
	for _, w := range ws {
		if !w.wait(60 * time.Second) {
			t.Fatalf("worker %s did not finish within 60s", w.id)
		}
		if w.err != nil {
			t.Fatalf("worker %s: %v", w.id, w.err)
		}
		w.close()
	}
	missing, dup, extra, err := sinkCounts(ctx, s, src, dst, "k")
	if err != nil {
		t.Fatal(err)
	}
	if missing != 0 || dup != 0 || extra != 0 {
		t.Fatalf("sink: %d rows missing, %d duplicated, %d extra; want 0, 0, 0", missing, dup, extra)
	}
}
