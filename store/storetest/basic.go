package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

func testCreateIfAbsent(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	for _, ks := range keyspaces() {
		rev := mustCreate(t, st, ks, "plan", []byte("v1"))
		if _, ok := create(t, st, ks, "plan", []byte("v2")); ok {
			t.Fatalf("%s: Create of a live key won", ks)
		}
		e, ok := get(t, st, ks, "plan")
		if !ok {
			t.Fatalf("%s: created key is absent", ks)
		}
		wantEntry(t, ks.String()+" after a losing Create", e, []byte("v1"), rev)
	}
}

func testUpdateCAS(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	for _, ks := range keyspaces() {
		r1 := mustCreate(t, st, ks, "k", []byte("v1"))
		r2 := mustUpdate(t, st, ks, "k", []byte("v2"), r1)
		if r2 <= r1 {
			t.Fatalf("%s: Update took revision %d, not above %d", ks, r2, r1)
		}
		losers := []struct {
			name     string
			key      string
			expected store.Revision
		}{
			{"stale revision", "k", r1},
			{"revision 0", "k", 0},
			{"revision from the future", "k", r2 + 1000},
			{"absent key", "absent", r2},
		}
		for _, l := range losers {
			if _, ok := update(t, st, ks, l.key, []byte("x"), l.expected); ok {
				t.Fatalf("%s: Update at a %s won", ks, l.name)
			}
		}
		e, _ := get(t, st, ks, "k")
		wantEntry(t, ks.String()+" after losing Updates", e, []byte("v2"), r2)
		if _, ok := get(t, st, ks, "absent"); ok {
			t.Fatalf("%s: a losing Update created a key", ks)
		}
	}
}

func testRevisionsIncrease(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	for _, ks := range keyspaces() {
		s, stop := openStream(t, st, ks, "k")
		s.snapshot()
		var last store.Revision
		next := func(what string, rev store.Revision) {
			t.Helper()
			if rev <= last {
				t.Fatalf("%s: %s took revision %d, not above %d", ks, what, rev, last)
			}
			last = rev
		}
		awaitDelete := func() {
			t.Helper()
			for {
				if ev := s.nextNew(); ev.Kind == store.Delete {
					next("the delete", ev.Entry.Revision)
					return
				}
			}
		}
		for round := range 3 {
			rev := mustCreate(t, st, ks, "k", fmt.Appendf(nil, "c%d", round))
			next("create", rev)
			rev = mustUpdate(t, st, ks, "k", fmt.Appendf(nil, "u%d", round), rev)
			next("update", rev)
			if round%2 == 0 {
				mustDelete(t, st, ks, "k", 0)
			} else {
				mustDelete(t, st, ks, "k", rev)
			}
			awaitDelete()
		}
		stop()
	}
}

func testDeletedKey(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	for _, ks := range keyspaces() {
		rev := mustCreate(t, st, ks, "k", []byte("v"))
		mustDelete(t, st, ks, "k", rev)
		if _, ok := get(t, st, ks, "k"); ok {
			t.Fatalf("%s: Get after Delete found the key", ks)
		}
		if _, ok := update(t, st, ks, "k", []byte("x"), rev); ok {
			t.Fatalf("%s: Update of a deleted key won", ks)
		}
		if l := list(t, st, ks, ""); len(l) != 0 {
			t.Fatalf("%s: List after Delete holds %d keys", ks, len(l))
		}
		again := mustCreate(t, st, ks, "k", []byte("again"))
		if again <= rev {
			t.Fatalf("%s: re-create took revision %d, not above %d", ks, again, rev)
		}
		e, _ := get(t, st, ks, "k")
		wantEntry(t, ks.String()+" re-created", e, []byte("again"), again)
	}
}

func testGuardedDelete(t *testing.T, newStore newStoreFunc) {
	tests := []struct {
		name     string
		setup    func(t *testing.T, st store.Store, ks store.Keyspace) (expected store.Revision, stillLive bool)
		wantWins bool
	}{
		{"wrong revision loses", func(t *testing.T, st store.Store, ks store.Keyspace) (store.Revision, bool) {
			r1 := mustCreate(t, st, ks, "k", []byte("v1"))
			mustUpdate(t, st, ks, "k", []byte("v2"), r1)
			return r1, true
		}, false},
		{"right revision wins", func(t *testing.T, st store.Store, ks store.Keyspace) (store.Revision, bool) {
			r1 := mustCreate(t, st, ks, "k", []byte("v1"))
			return mustUpdate(t, st, ks, "k", []byte("v2"), r1), false
		}, true},
		{"unguarded on a live key wins", func(t *testing.T, st store.Store, ks store.Keyspace) (store.Revision, bool) {
			mustCreate(t, st, ks, "k", []byte("v1"))
			return 0, false
		}, true},
		{"guarded on a never-written key wins", func(*testing.T, store.Store, store.Keyspace) (store.Revision, bool) {
			return 7, false
		}, true},
		{"unguarded on a never-written key wins", func(*testing.T, store.Store, store.Keyspace) (store.Revision, bool) {
			return 0, false
		}, true},
		{"guarded on a deleted key wins", func(t *testing.T, st store.Store, ks store.Keyspace) (store.Revision, bool) {
			r := mustCreate(t, st, ks, "k", []byte("v1"))
			mustDelete(t, st, ks, "k", 0)
			return r, false
		}, true},
		{"unguarded on a deleted key wins", func(t *testing.T, st store.Store, ks store.Keyspace) (store.Revision, bool) {
			mustCreate(t, st, ks, "k", []byte("v1"))
			mustDelete(t, st, ks, "k", 0)
			return 0, false
		}, true},
	}
	st, _ := fresh(t, newStore)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, ks := range keyspaces() {
				// Each row and keyspace gets its own key on the shared store.
				ns := &prefixed{Store: st, prefix: fmt.Sprintf("gd%d.", i)}
				expected, stillLive := tc.setup(t, ns, ks)
				if got := del(t, ns, ks, "k", expected); got != tc.wantWins {
					t.Fatalf("%s: Delete(rev %d) = %v; want %v", ks, expected, got, tc.wantWins)
				}
				if _, live := get(t, ns, ks, "k"); live != stillLive {
					t.Fatalf("%s: after Delete the key is live=%v; want %v", ks, live, stillLive)
				}
			}
		})
	}
}

func testList(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	for _, ks := range keyspaces() {
		want := map[string]store.Entry{}
		for _, k := range []string{"split.a", "split.b", "spec.c", "splitx", "other", "s", "old.split.a", "a.spec.c"} {
			rev := mustCreate(t, st, ks, k, []byte("v-"+k))
			want[k] = store.Entry{Key: k, Value: []byte("v-" + k), Revision: rev}
		}
		rev := mustUpdate(t, st, ks, "spec.c", []byte("new"), want["spec.c"].Revision)
		want["spec.c"] = store.Entry{Key: "spec.c", Value: []byte("new"), Revision: rev}
		mustDelete(t, st, ks, "split.b", 0)
		delete(want, "split.b")
		for _, prefix := range []string{"", "s", "sp", "split.", "split", "spec.c", "zzz"} {
			under := map[string]store.Entry{}
			for k, e := range want {
				if strings.HasPrefix(k, prefix) {
					under[k] = e
				}
			}
			sameEntries(t, fmt.Sprintf("List(%s, %q)", ks, prefix), list(t, st, ks, prefix), under)
		}
	}
}

func testKeyspaces(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	rd := mustCreate(t, st, store.Durable, "k", []byte("durable"))
	re, ok := create(t, st, store.Ephemeral, "k", []byte("ephemeral"))
	if !ok {
		t.Fatal("Create in Ephemeral lost because the key is live in Durable")
	}
	d, _ := get(t, st, store.Durable, "k")
	wantEntry(t, "durable", d, []byte("durable"), rd)
	e, _ := get(t, st, store.Ephemeral, "k")
	wantEntry(t, "ephemeral", e, []byte("ephemeral"), re)

	s, stop := openStream(t, st, store.Ephemeral, "")
	defer stop()
	s.snapshot()
	mustDelete(t, st, store.Durable, "k", 0)
	mustCreate(t, st, store.Durable, "only-durable", nil)
	if _, ok := get(t, st, store.Ephemeral, "k"); !ok {
		t.Fatal("deleting the durable key removed the ephemeral one")
	}
	if l := list(t, st, store.Ephemeral, ""); len(l) != 1 {
		t.Fatalf("List(ephemeral) holds %d keys; want only k", len(l))
	}
	mustCreate(t, st, store.Ephemeral, "marker", nil)
	if ev := s.nextNew(); ev.Entry.Key != "marker" {
		t.Fatalf("ephemeral watch saw %v of %q before the marker; durable writes leaked into it", ev.Kind, ev.Entry.Key)
	}
}

func testValues(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	big := make([]byte, 64<<10)
	if limit, ok := store.MaxValueSize(unwrap(st)); ok {
		big = big[:min(len(big), limit)]
	}
	for i := range big {
		big[i] = byte(i*7 + i>>8)
	}
	values := []struct {
		name  string
		value []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"zero byte", []byte{0}},
		{"every byte value", all},
		{"text", []byte(`{"owner":"w-1","epoch":3}`)},
		{fmt.Sprintf("%d bytes", len(big)), big},
	}
	for _, ks := range keyspaces() {
		s, stop := openStream(t, st, ks, "v.")
		s.snapshot()
		want := map[string]store.Entry{}
		for i, v := range values {
			key := fmt.Sprintf("v.%d", i)
			rev := mustCreate(t, st, ks, key, v.value)
			e, _ := get(t, st, ks, key)
			wantEntry(t, fmt.Sprintf("%s Get of %s value", ks, v.name), e, v.value, rev)
			ev := s.nextNew()
			wantEntry(t, fmt.Sprintf("%s watch Put of %s value", ks, v.name), ev.Entry, v.value, rev)
			// Overwrite with the next value, so updates are checked too.
			nv := values[(i+1)%len(values)].value
			rev = mustUpdate(t, st, ks, key, nv, rev)
			s.nextNew()
			want[key] = store.Entry{Key: key, Value: nv, Revision: rev}
		}
		stop()
		sameEntries(t, ks.String()+" List of values", list(t, st, ks, "v."), want)
		s, stop = openStream(t, st, ks, "v.")
		sameEntries(t, ks.String()+" watch snapshot of values", s.snapshot(), want)
		stop()
	}
}

func testValueCap(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	limit, ok := store.MaxValueSize(unwrap(st))
	if !ok {
		t.Skip("the store does not cap value size")
	}
	over := bytes.Repeat([]byte{'x'}, limit+1)
	reason := fmt.Sprintf("value for k is %d bytes, above this store's cap of %d bytes", limit+1, limit)
	wantFatal := func(op string, err error) {
		t.Helper()
		if coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), reason) {
			t.Fatalf("%s of a value one byte over the cap: error %v; want Fatal %q", op, err, reason)
		}
	}
	for _, ks := range keyspaces() {
		ctx, cancel := opCtx(st)
		_, ok, err := st.Create(ctx, ks, "k", over)
		cancel()
		wantFatal("Create", err)
		if _, live := get(t, st, ks, "k"); live || ok {
			t.Fatalf("%s: the over-cap Create wrote the key", ks)
		}
		atCap := bytes.Repeat([]byte{'y'}, limit)
		rev := mustCreate(t, st, ks, "k", atCap)
		ctx, cancel = opCtx(st)
		_, ok, err = st.Update(ctx, ks, "k", over, rev)
		cancel()
		wantFatal("Update", err)
		e, _ := get(t, st, ks, "k")
		if ok {
			t.Fatalf("%s: the over-cap Update won", ks)
		}
		wantEntry(t, ks.String()+" after the over-cap Update", e, atCap, rev)
	}
}

func testDoneContext(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	mustCreate(t, st, store.Durable, "k", []byte("v"))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	ctxs := []struct {
		name  string
		ctx   context.Context
		cause error
	}{
		{"cancelled", cancelled, context.Canceled},
		{"expired", expired, context.DeadlineExceeded},
	}
	for _, c := range ctxs {
		ops := []struct {
			name string
			do   func() error
		}{
			{"Create", func() error { _, _, err := st.Create(c.ctx, store.Durable, "new", nil); return err }},
			{"Update", func() error { _, _, err := st.Update(c.ctx, store.Durable, "k", nil, 1); return err }},
			{"Get", func() error { _, _, err := st.Get(c.ctx, store.Durable, "k"); return err }},
			{"Delete", func() error { _, err := st.Delete(c.ctx, store.Durable, "k", 0); return err }},
			{"List", func() error { _, err := st.List(c.ctx, store.Durable, ""); return err }},
			{"Watch", func() error {
				w, err := st.Watch(c.ctx, store.Durable, "")
				if err == nil {
					w.Stop()
				}
				return err
			}},
		}
		for _, op := range ops {
			t.Run(c.name+"/"+op.name, func(t *testing.T) {
				err := op.do()
				if coordination.KindOf(err) != coordination.Retryable {
					t.Fatalf("error %v; want Retryable", err)
				}
				if !errors.Is(err, c.cause) {
					t.Fatalf("error %v does not wrap %v; keep the cause in Err", err, c.cause)
				}
			})
		}
	}
	if _, ok := get(t, st, store.Durable, "new"); ok {
		t.Fatal("a Create with a done context wrote the key")
	}
	if _, ok := get(t, st, store.Durable, "k"); !ok {
		t.Fatal("a Delete with a done context removed the key")
	}
}

func testClose(t *testing.T, newStore newStoreFunc) {
	st, closeStore := fresh(t, newStore)
	mustCreate(t, st, store.Durable, "k", []byte("v"))
	s, stop := openStream(t, st, store.Durable, "")
	defer stop()
	s.snapshot()
	closeStore()
	s.awaitClosed()
	if err := s.w.Err(); err != nil {
		t.Fatalf("watch Err after Close = %v; want nil", err)
	}
	ctx := context.Background()
	ops := []struct {
		name string
		do   func() error
	}{
		{"Create", func() error { _, _, err := st.Create(ctx, store.Durable, "new", nil); return err }},
		{"Update", func() error { _, _, err := st.Update(ctx, store.Durable, "k", nil, 1); return err }},
		{"Get", func() error { _, _, err := st.Get(ctx, store.Durable, "k"); return err }},
		{"Delete", func() error { _, err := st.Delete(ctx, store.Durable, "k", 0); return err }},
		{"List", func() error { _, err := st.List(ctx, store.Durable, ""); return err }},
		{"Watch", func() error {
			w, err := st.Watch(ctx, store.Durable, "")
			if err == nil {
				w.Stop()
			}
			return err
		}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			err := op.do()
			if coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), "store is closed") {
				t.Fatalf("%s after Close: error %v; want Fatal \"store is closed\"", op.name, err)
			}
		})
	}
}

// prefixed gives a test its own part of a shared store by prefixing every key
// it writes or reads.
type prefixed struct {
	store.Store
	prefix string
}

func (p *prefixed) Create(ctx context.Context, ks store.Keyspace, key string, value []byte) (store.Revision, bool, error) {
	return p.Store.Create(ctx, ks, p.prefix+key, value)
}

func (p *prefixed) Update(ctx context.Context, ks store.Keyspace, key string, value []byte, expected store.Revision) (store.Revision, bool, error) {
	return p.Store.Update(ctx, ks, p.prefix+key, value, expected)
}

func (p *prefixed) Get(ctx context.Context, ks store.Keyspace, key string) (store.Entry, bool, error) {
	e, ok, err := p.Store.Get(ctx, ks, p.prefix+key)
	if ok {
		e.Key = strings.TrimPrefix(e.Key, p.prefix)
	}
	return e, ok, err
}

func (p *prefixed) Delete(ctx context.Context, ks store.Keyspace, key string, expected store.Revision) (bool, error) {
	return p.Store.Delete(ctx, ks, p.prefix+key, expected)
}

func (p *prefixed) checkBudget() *budget { return budgetOf(p.Store) }
