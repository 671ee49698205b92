package pgstore

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
)

// UpdateTx: the caller's rows land with a won comparison and only then; a
// comparison already lost rolls the caller's rows back, and is reported as
// lost even when the sink refused them (a retry of an attempt that landed
// unseen); an error of the caller's rolls the update back.
func TestUpdateTx(t *testing.T) {
	s := pgtest.Need(t, srv)
	st := newStore(t, s, Config{}, testTTL)
	ctx := opCtx(t)
	sink := pgtest.UniqueName("sink")
	if err := s.Exec(ctx, "CREATE TABLE "+sink+" (v int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	rows := func() int {
		t.Helper()
		var n int
		conn, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+sink).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	insert := func(v int, ran *bool) store.TxFunc {
		return func(ctx context.Context, tx any) error {
			*ran = true
			_, err := tx.(pgx.Tx).Exec(ctx, "INSERT INTO "+sink+" VALUES ($1)", v)
			return err
		}
	}
	rev, ok, err := st.Create(ctx, store.Durable, "p", []byte("0"))
	if err != nil || !ok {
		t.Fatalf("Create: %v %v", ok, err)
	}
	var ran bool
	rev2, ok, err := st.UpdateTx(ctx, store.Durable, "p", []byte("1"), rev, insert(1, &ran))
	if err != nil || !ok || !ran || rows() != 1 {
		t.Fatalf("won UpdateTx: ok=%v err=%v ran=%v rows=%d; want the row and the update", ok, err, ran, rows())
	}
	ran = false
	if _, ok, err := st.UpdateTx(ctx, store.Durable, "p", []byte("2"), rev, insert(2, &ran)); err != nil || ok || !ran || rows() != 1 {
		t.Fatalf("UpdateTx at a stale revision: ok=%v err=%v ran=%v rows=%d; want lost, its row rolled back", ok, err, ran, rows())
	}
	// The first write again, as a retry whose reply was lost sends it: the
	// sink's key refuses its row, and the answer is the lost comparison.
	if _, ok, err := st.UpdateTx(ctx, store.Durable, "p", []byte("1"), rev, insert(1, &ran)); err != nil || ok || rows() != 1 {
		t.Fatalf("UpdateTx retrying a landed write: ok=%v err=%v rows=%d; want lost, not the sink's refusal", ok, err, rows())
	}
	failing := func(context.Context, any) error { return errors.New("sink refused") }
	if _, ok, err := st.UpdateTx(ctx, store.Durable, "p", []byte("3"), rev2, failing); ok || coordination.KindOf(err) != coordination.Retryable {
		t.Fatalf("UpdateTx with a failing fn: ok=%v err=%v; want Retryable, nothing written", ok, err)
	}
	if e, _, _ := st.Get(ctx, store.Durable, "p"); string(e.Value) != "1" || e.Revision != rev2 {
		t.Fatalf("after a failed fn the entry is %q at %d, want %q at %d", e.Value, e.Revision, "1", rev2)
	}
	// A comparison that loses after the statements ran (a concurrent
	// writer between the read and the lock) rolls them back.
	ran = false
	racing := func(ctx context.Context, tx any) error {
		if _, ok, err := st.Update(ctx, store.Durable, "p", []byte("x"), rev2); err != nil || !ok {
			t.Errorf("concurrent Update: %v %v", ok, err)
		}
		return insert(3, &ran)(ctx, tx)
	}
	if _, ok, err := st.UpdateTx(ctx, store.Durable, "p", []byte("4"), rev2, racing); err != nil || ok || !ran || rows() != 1 {
		t.Fatalf("UpdateTx losing after its statements: ok=%v err=%v ran=%v rows=%d; want lost, its row rolled back", ok, err, ran, rows())
	}
}
