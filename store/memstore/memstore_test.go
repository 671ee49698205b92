package memstore

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

func TestRevisionsPerKeyspace(t *testing.T) {
	st, clk := newMock(t)
	wd, _ := mustWatch(t, st, store.Durable, "")
	we, _ := mustWatch(t, st, store.Ephemeral, "")

	steps := []struct {
		name string
		do   func() store.Revision // returns the revision the step must take
		want store.Revision
	}{
		{"durable create", func() store.Revision { return mustCreate(t, st, store.Durable, "a", "1") }, 1},
		{"ephemeral create has its own counter", func() store.Revision { return mustCreate(t, st, store.Ephemeral, "a", "1") }, 1},
		{"durable update", func() store.Revision { return mustUpdate(t, st, store.Durable, "a", "2", 1) }, 2},
		{"durable delete takes a revision", func() store.Revision {
			if ok, err := st.Delete(context.Background(), store.Durable, "a", 0); !ok || err != nil {
				t.Fatalf("Delete = %v, %v", ok, err)
			}
			return lastRev(t, wd, store.Delete, "a")
		}, 3},
		{"absent delete takes none", func() store.Revision {
			if ok, err := st.Delete(context.Background(), store.Durable, "a", 7); !ok || err != nil {
				t.Fatalf("Delete of absent key = %v, %v; want true", ok, err)
			}
			return mustCreate(t, st, store.Durable, "b", "1")
		}, 4},
		{"expiry takes a revision", func() store.Revision {
			clk.Add(ttl)
			return lastRev(t, we, store.Delete, "a")
		}, 2},
		{"ephemeral create after expiry", func() store.Revision { return mustCreate(t, st, store.Ephemeral, "a", "x") }, 3},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Fatalf("%s: revision %d, want %d", s.name, got, s.want)
		}
	}
}

// lastRev reads w until an event of kind on key and returns its revision.
func lastRev(t *testing.T, w store.Watcher, kind store.EventKind, key string) store.Revision {
	t.Helper()
	for ev := range w.Events() {
		if ev.Kind == kind && ev.Entry.Key == key {
			return ev.Entry.Revision
		}
	}
	t.Fatalf("watch ended (%v) before a %v of %q", w.Err(), kind, key)
	return 0
}

func TestOutcomes(t *testing.T) {
	ctx := context.Background()
	st, _ := newMock(t)
	r1 := mustCreate(t, st, store.Durable, "k", "v1")
	r2 := mustUpdate(t, st, store.Durable, "k", "v2", r1)

	tests := []struct {
		name string
		do   func() (bool, error)
		want bool
	}{
		{"create of a live key loses", func() (bool, error) {
			_, ok, err := st.Create(ctx, store.Durable, "k", []byte("x"))
			return ok, err
		}, false},
		{"update at a stale revision loses", func() (bool, error) {
			_, ok, err := st.Update(ctx, store.Durable, "k", []byte("x"), r1)
			return ok, err
		}, false},
		{"update at revision 0 loses", func() (bool, error) {
			_, ok, err := st.Update(ctx, store.Durable, "k", []byte("x"), 0)
			return ok, err
		}, false},
		{"update of an absent key loses", func() (bool, error) {
			_, ok, err := st.Update(ctx, store.Durable, "nope", []byte("x"), r2)
			return ok, err
		}, false},
		{"update in the other keyspace loses", func() (bool, error) {
			_, ok, err := st.Update(ctx, store.Ephemeral, "k", []byte("x"), r2)
			return ok, err
		}, false},
		{"guarded delete at a stale revision loses", func() (bool, error) {
			return st.Delete(ctx, store.Durable, "k", r1)
		}, false},
		{"guarded delete of a never-written key wins", func() (bool, error) {
			return st.Delete(ctx, store.Durable, "nope", 42)
		}, true},
		{"unguarded delete of a never-written key wins", func() (bool, error) {
			return st.Delete(ctx, store.Durable, "nope", 0)
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, err := tc.do()
			if err != nil || ok != tc.want {
				t.Fatalf("got %v, %v; want %v, nil", ok, err, tc.want)
			}
		})
	}
	e, ok, err := st.Get(ctx, store.Durable, "k")
	if err != nil || !ok || string(e.Value) != "v2" || e.Revision != r2 || e.Key != "k" {
		t.Fatalf("after losing writes Get = %+v, %v, %v; want v2 at %d", e, ok, err, r2)
	}
	if ok, err := st.Delete(ctx, store.Durable, "k", r2); !ok || err != nil {
		t.Fatalf("guarded delete at the live revision = %v, %v; want true", ok, err)
	}
	if ok, err := st.Delete(ctx, store.Durable, "k", r2); !ok || err != nil {
		t.Fatalf("guarded delete of a deleted key = %v, %v; want true", ok, err)
	}
	if e, ok, err := st.Get(ctx, store.Durable, "k"); ok || err != nil || e.Key != "" || e.Value != nil || e.Revision != 0 {
		t.Fatalf("Get after delete = %+v, %v, %v; want the zero Entry", e, ok, err)
	}
	if r3 := mustCreate(t, st, store.Durable, "k", "v3"); r3 <= r2 {
		t.Fatalf("re-create took revision %d, not above %d", r3, r2)
	}
}

func TestValuesAreCopied(t *testing.T) {
	ctx := context.Background()
	st, _ := newMock(t)
	w1, _ := mustWatch(t, st, store.Durable, "")
	w2, _ := mustWatch(t, st, store.Durable, "")

	in := []byte("abc")
	if _, _, err := st.Create(ctx, store.Durable, "k", in); err != nil {
		t.Fatal(err)
	}
	in[0] = 'X'
	e1 := <-w1.Events()
	e1.Entry.Value[1] = 'Y'
	e2 := <-w2.Events()
	got, _, _ := st.Get(ctx, store.Durable, "k")
	got.Value[2] = 'Z'
	again, _, _ := st.Get(ctx, store.Durable, "k")
	list, _ := st.List(ctx, store.Durable, "")
	for name, v := range map[string][]byte{"second watcher": e2.Entry.Value, "Get": again.Value, "List": list[0].Value} {
		if string(v) != "abc" {
			t.Errorf("%s sees %q; want the stored %q untouched by callers", name, v, "abc")
		}
	}
}

func TestEmptyValueRoundTrips(t *testing.T) {
	ctx := context.Background()
	st, _ := newMock(t)
	for _, v := range [][]byte{nil, {}} {
		rev := mustCreate(t, st, store.Durable, "k", string(v))
		e, ok, err := st.Get(ctx, store.Durable, "k")
		if err != nil || !ok || e.Value == nil || len(e.Value) != 0 {
			t.Fatalf("Get of empty value = %#v, %v, %v; want a non-nil empty value", e.Value, ok, err)
		}
		if ok, err := st.Delete(ctx, store.Durable, "k", rev); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
}

func TestValueCap(t *testing.T) {
	ctx := context.Background()
	if got := New(ttl).MaxValueSize(); got != 0 {
		t.Fatalf("default MaxValueSize = %d; want 0", got)
	}
	st, _ := newMock(t, WithMaxValueSize(8))
	if got := st.MaxValueSize(); got != 8 {
		t.Fatalf("MaxValueSize = %d; want 8", got)
	}
	w, _ := mustWatch(t, st, store.Durable, "")
	const reason = "value for k is 9 bytes, above this store's cap of 8 bytes"

	_, ok, err := st.Create(ctx, store.Durable, "k", bytes.Repeat([]byte("x"), 9))
	if ok {
		t.Fatal("over-cap Create won")
	}
	wantErr(t, err, coordination.Fatal, reason)
	if isLive(t, st, store.Durable, "k") {
		t.Fatal("over-cap Create wrote the key")
	}
	rev := mustCreate(t, st, store.Durable, "k", "12345678") // exactly the cap
	_, ok, err = st.Update(ctx, store.Durable, "k", bytes.Repeat([]byte("y"), 9), rev)
	if ok {
		t.Fatal("over-cap Update won")
	}
	wantErr(t, err, coordination.Fatal, reason)
	if e, _, _ := st.Get(ctx, store.Durable, "k"); string(e.Value) != "12345678" || e.Revision != rev {
		t.Fatalf("over-cap Update changed the entry to %q at %d", e.Value, e.Revision)
	}
	if evs, _ := pending(w); len(evs) != 1 {
		t.Fatalf("watcher saw %d events; want only the at-cap create", len(evs))
	}
}

func TestCancelledContextIsRetryable(t *testing.T) {
	st, _ := newMock(t)
	mustCreate(t, st, store.Durable, "k", "v")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ops := map[string]func() error{
		"create": func() error { _, _, err := st.Create(ctx, store.Durable, "n", nil); return err },
		"update": func() error { _, _, err := st.Update(ctx, store.Durable, "k", nil, 1); return err },
		"get":    func() error { _, _, err := st.Get(ctx, store.Durable, "k"); return err },
		"delete": func() error { _, err := st.Delete(ctx, store.Durable, "k", 0); return err },
		"list":   func() error { _, err := st.List(ctx, store.Durable, ""); return err },
		"watch":  func() error { _, err := st.Watch(ctx, store.Durable, ""); return err },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			err := op()
			if coordination.KindOf(err) != coordination.Retryable || !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v; want Retryable wrapping context.Canceled", err)
			}
		})
	}
	if e, ok, _ := st.Get(context.Background(), store.Durable, "k"); !ok || e.Revision != 1 {
		t.Fatal("a cancelled operation changed the store")
	}
}

func TestClose(t *testing.T) {
	ctx := context.Background()
	st, _ := newMock(t)
	mustCreate(t, st, store.Ephemeral, "k", "v")
	w, _ := mustWatch(t, st, store.Ephemeral, "")
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, ok := <-w.Events(); ok {
		t.Fatal("watch delivered an event after Close")
	}
	if err := w.Err(); err != nil {
		t.Fatalf("watch Err after Close = %v; want nil", err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ops := map[string]func() error{
		"create": func() error { _, _, err := st.Create(ctx, store.Durable, "n", nil); return err },
		"update": func() error { _, _, err := st.Update(ctx, store.Durable, "k", nil, 1); return err },
		"get":    func() error { _, _, err := st.Get(ctx, store.Durable, "k"); return err },
		"delete": func() error { _, err := st.Delete(ctx, store.Durable, "k", 0); return err },
		"list":   func() error { _, err := st.List(ctx, store.Durable, ""); return err },
		"watch":  func() error { _, err := st.Watch(ctx, store.Durable, ""); return err },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) { wantErr(t, op(), coordination.Fatal, "store is closed") })
	}
}
