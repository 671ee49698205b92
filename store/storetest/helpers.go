package storetest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spate-go/coordination/store"
)

// opTimeout bounds each store operation of the suite, so that a hung backend
// fails a check instead of hanging the test binary.
const opTimeout = 10 * time.Second

// eventTimeout is how long the suite waits for a watch event it expects.
const eventTimeout = 5 * time.Second

// pollEvery is the cadence of eventually.
const pollEvery = 10 * time.Millisecond

// tester is what the helpers need from *testing.T and *rapid.T alike.
type tester interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// fresh returns a new store from newStore and closes it when t ends, unless
// the test closed it itself through the returned close func.
func fresh(t *testing.T, newStore newStoreFunc) (store.Store, func()) {
	t.Helper()
	st := newStore(t, requestedTTL)
	if st == nil {
		t.Fatal("newStore returned nil")
	}
	if st.LeaseTTL() <= 0 {
		t.Fatalf("newStore returned a store whose LeaseTTL is %v; want a positive TTL", st.LeaseTTL())
	}
	var once sync.Once
	closeStore := func() {
		once.Do(func() {
			if err := st.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	t.Cleanup(closeStore)
	return st, closeStore
}

// create runs Create and fails the test on an error or on a losing
// Create that reports a revision.
func create(t tester, st store.Store, ks store.Keyspace, key string, value []byte) (store.Revision, bool) {
	t.Helper()
	ctx, cancel := opCtx(st)
	defer cancel()
	rev, ok, err := st.Create(ctx, ks, key, value)
	if err != nil {
		failOp(t, st, ctx, fmt.Sprintf("Create(%s, %q)", ks, key), err)
	}
	checkOutcome(t, "Create", ks, key, rev, ok)
	return rev, ok
}

// update runs Update and fails the test on an error or on an inconsistent
// outcome.
func update(t tester, st store.Store, ks store.Keyspace, key string, value []byte, expected store.Revision) (store.Revision, bool) {
	t.Helper()
	ctx, cancel := opCtx(st)
	defer cancel()
	rev, ok, err := st.Update(ctx, ks, key, value, expected)
	if err != nil {
		failOp(t, st, ctx, fmt.Sprintf("Update(%s, %q, rev %d)", ks, key, expected), err)
	}
	checkOutcome(t, "Update", ks, key, rev, ok)
	return rev, ok
}

// checkOutcome checks the shape of a write's result: a win has a real
// revision, a loss is (0, false).
func checkOutcome(t tester, op string, ks store.Keyspace, key string, rev store.Revision, ok bool) {
	t.Helper()
	if ok && rev == 0 {
		t.Fatalf("%s(%s, %q) won with revision 0; 0 is never a real revision", op, ks, key)
	}
	if !ok && rev != 0 {
		t.Fatalf("%s(%s, %q) lost but returned revision %d; want (0, false, nil)", op, ks, key, rev)
	}
}

// mustCreate creates key and fails the test unless it wins.
func mustCreate(t tester, st store.Store, ks store.Keyspace, key string, value []byte) store.Revision {
	t.Helper()
	rev, ok := create(t, st, ks, key, value)
	if !ok {
		t.Fatalf("Create(%s, %q) lost; want a win on an absent key", ks, key)
	}
	return rev
}

// mustUpdate updates key at expected and fails the test unless it wins.
func mustUpdate(t tester, st store.Store, ks store.Keyspace, key string, value []byte, expected store.Revision) store.Revision {
	t.Helper()
	rev, ok := update(t, st, ks, key, value, expected)
	if !ok {
		t.Fatalf("Update(%s, %q, rev %d) lost; want a win at the live revision", ks, key, expected)
	}
	return rev
}

// get runs Get and fails the test on an error, or when an absent result is
// not the zero Entry.
func get(t tester, st store.Store, ks store.Keyspace, key string) (store.Entry, bool) {
	t.Helper()
	ctx, cancel := opCtx(st)
	defer cancel()
	e, ok, err := st.Get(ctx, ks, key)
	if err != nil {
		failOp(t, st, ctx, fmt.Sprintf("Get(%s, %q)", ks, key), err)
	}
	if !ok && (e.Key != "" || e.Value != nil || e.Revision != 0) {
		t.Fatalf("Get(%s, %q) absent but returned %+v; want the zero Entry", ks, key, e)
	}
	if ok && e.Key != key {
		t.Fatalf("Get(%s, %q) returned the entry of key %q", ks, key, e.Key)
	}
	return e, ok
}

// del runs Delete and fails the test on an error.
func del(t tester, st store.Store, ks store.Keyspace, key string, expected store.Revision) bool {
	t.Helper()
	ctx, cancel := opCtx(st)
	defer cancel()
	ok, err := st.Delete(ctx, ks, key, expected)
	if err != nil {
		failOp(t, st, ctx, fmt.Sprintf("Delete(%s, %q, rev %d)", ks, key, expected), err)
	}
	return ok
}

// mustDelete deletes key and fails the test unless it wins.
func mustDelete(t tester, st store.Store, ks store.Keyspace, key string, expected store.Revision) {
	t.Helper()
	if !del(t, st, ks, key, expected) {
		t.Fatalf("Delete(%s, %q, rev %d) lost; want a win", ks, key, expected)
	}
}

// list runs List, fails the test on an error or a key listed twice, and
// returns the entries by key.
func list(t tester, st store.Store, ks store.Keyspace, prefix string) map[string]store.Entry {
	t.Helper()
	ctx, cancel := opCtx(st)
	defer cancel()
	es, err := st.List(ctx, ks, prefix)
	if err != nil {
		failOp(t, st, ctx, fmt.Sprintf("List(%s, %q)", ks, prefix), err)
	}
	out := make(map[string]store.Entry, len(es))
	for _, e := range es {
		if _, dup := out[e.Key]; dup {
			t.Fatalf("List(%s, %q) returned %q twice", ks, prefix, e.Key)
		}
		out[e.Key] = e
	}
	return out
}

// wantEntry fails the test unless e holds value at rev.
func wantEntry(t tester, what string, e store.Entry, value []byte, rev store.Revision) {
	t.Helper()
	if !bytes.Equal(e.Value, value) || e.Revision != rev {
		t.Fatalf("%s: %q = %s at revision %d; want %s at revision %d", what, e.Key, short(e.Value), e.Revision, short(value), rev)
	}
}

// short renders a value for a failure message without flooding it.
func short(v []byte) string {
	if len(v) > 32 {
		return fmt.Sprintf("%q... (%d bytes)", v[:32], len(v))
	}
	return fmt.Sprintf("%q", v)
}

// eventually polls cond every pollEvery until it holds, and fails the test
// naming what when it still does not hold after timeout.
func eventually(t tester, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %v", what, timeout)
		}
		<-tick.C
	}
}
