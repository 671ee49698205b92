package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/spate-go/coordination/store"
)

func testWatchSnapshotThenTail(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	for _, ks := range keyspaces() {
		ra := mustCreate(t, st, ks, "a", []byte("a1"))
		rb := mustCreate(t, st, ks, "b", []byte("b1"))
		rb = mustUpdate(t, st, ks, "b", []byte("b2"), rb)
		s, stop := openStream(t, st, ks, "")
		sameEntries(t, ks.String()+" snapshot", s.snapshot(), map[string]store.Entry{
			"a": {Key: "a", Value: []byte("a1"), Revision: ra},
			"b": {Key: "b", Value: []byte("b2"), Revision: rb},
		})
		// The tail, one write at a time; a duplicate of an earlier event is
		// allowed and skipped.
		seen := map[string]store.Revision{"a": ra, "b": rb}
		expect := func(kind store.EventKind, key string, value []byte, rev store.Revision) {
			t.Helper()
			ev := s.nextNew()
			if ev.Kind != kind || ev.Entry.Key != key {
				t.Fatalf("%s tail: %v of %q; want %v of %q", ks, ev.Kind, ev.Entry.Key, kind, key)
			}
			if kind == store.Put {
				wantEntry(t, ks.String()+" tail", ev.Entry, value, rev)
			} else if ev.Entry.Revision <= seen[key] {
				t.Fatalf("%s tail: Delete of %q at revision %d, not above the key's last revision %d", ks, key, ev.Entry.Revision, seen[key])
			}
			seen[key] = ev.Entry.Revision
		}
		rc := mustCreate(t, st, ks, "c", []byte("c1"))
		expect(store.Put, "c", []byte("c1"), rc)
		ra = mustUpdate(t, st, ks, "a", []byte("a2"), ra)
		expect(store.Put, "a", []byte("a2"), ra)
		mustDelete(t, st, ks, "b", rb)
		expect(store.Delete, "b", nil, 0)
		rb = mustCreate(t, st, ks, "b", []byte("b3"))
		if rb <= seen["b"] {
			t.Fatalf("%s: re-created b at revision %d, not above its delete at %d", ks, rb, seen["b"])
		}
		expect(store.Put, "b", []byte("b3"), rb)
		stop()
	}
}

func testWatchPrefix(t *testing.T, newStore newStoreFunc) {
	before := []string{"split.a", "spec.b", "sp", "splitx", "old.split.a"}
	after := []string{"split.ab", "s", "other", "spec.c", "split.b", "x.spec.b"}
	tests := []struct {
		name   string
		prefix string
	}{
		{"empty", ""},
		{"no dot", "sp"},
		{"ending mid-token", "spl"},
		{"ending mid-token after a dot", "split.a"},
		{"ending with a dot", "split."},
		{"a whole key", "spec.b"},
		{"matching nothing", "zzz"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := fresh(t, newStore)
			want := map[string]store.Entry{}
			for _, k := range before {
				rev := mustCreate(t, st, store.Durable, k, []byte(k))
				if strings.HasPrefix(k, tc.prefix) {
					want[k] = store.Entry{Key: k, Value: []byte(k), Revision: rev}
				}
			}
			s, stop := openStream(t, st, store.Durable, tc.prefix)
			defer stop()
			snap := s.snapshot()
			sameEntries(t, fmt.Sprintf("snapshot of %q", tc.prefix), snap, want)
			r := newReplica()
			for _, e := range snap {
				r.apply(store.WatchEvent{Kind: store.Put, Entry: e})
			}
			for _, k := range after {
				rev := mustCreate(t, st, store.Durable, k, []byte(k))
				if strings.HasPrefix(k, tc.prefix) {
					want[k] = store.Entry{Key: k, Value: []byte(k), Revision: rev}
				}
			}
			finals := map[string]final{}
			for k, e := range want {
				finals[k] = final{rev: e.Revision}
			}
			s.awaitFinal(finals, func(ev store.WatchEvent) {
				if ev.Kind != store.SnapshotDone && !strings.HasPrefix(ev.Entry.Key, tc.prefix) {
					t.Fatalf("watch of %q delivered %q", tc.prefix, ev.Entry.Key)
				}
				r.apply(ev)
			})
			sameEntries(t, fmt.Sprintf("watch of %q", tc.prefix), r.live, want)
		})
	}
}

func testWatchNothingMatches(t *testing.T, newStore newStoreFunc) {
	tests := []struct {
		name     string
		ks       store.Keyspace
		existing []string // keys in ks
		other    []string // keys in the other keyspace
		prefix   string
	}{
		{"empty store, empty prefix", store.Durable, nil, nil, ""},
		{"empty store, a prefix", store.Durable, nil, nil, "split."},
		{"only keys outside the prefix", store.Durable, []string{"spec.a", "other", "split"}, nil, "split."},
		{"only keys outside a prefix without a dot", store.Durable, []string{"spec.a", "other"}, nil, "spl"},
		{"only keys outside the prefix, ephemeral", store.Ephemeral, []string{"spec.a", "other"}, nil, "split."},
		{"keys only in the other keyspace", store.Ephemeral, nil, []string{"a", "split.a"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := fresh(t, newStore)
			for _, k := range tc.existing {
				mustCreate(t, st, tc.ks, k, []byte("v"))
			}
			for _, k := range tc.other {
				mustCreate(t, st, otherKeyspace(tc.ks), k, []byte("v"))
			}
			s, stop := openStream(t, st, tc.ks, tc.prefix)
			defer stop()
			if ev := s.mustNext(); ev.Kind != store.SnapshotDone {
				t.Fatalf("first event %v of %q; want SnapshotDone", ev.Kind, ev.Entry.Key)
			}
			rev := mustCreate(t, st, tc.ks, tc.prefix+"new", []byte("n"))
			ev := s.mustNext()
			if ev.Kind != store.Put {
				t.Fatalf("tail event %v of %q; want the Put of %q", ev.Kind, ev.Entry.Key, tc.prefix+"new")
			}
			wantEntry(t, "tail", ev.Entry, []byte("n"), rev)
		})
	}
}

func testWatchSnapshotNoDeletes(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	for _, ks := range keyspaces() {
		ra := mustCreate(t, st, ks, "a", []byte("a"))
		rb := mustCreate(t, st, ks, "b", []byte("b"))
		rc := mustCreate(t, st, ks, "c", []byte("c"))
		mustDelete(t, st, ks, "b", rb)
		rc = mustUpdate(t, st, ks, "c", []byte("c2"), rc)
		mustDelete(t, st, ks, "never-written", 0)
		s, stop := openStream(t, st, ks, "")
		// stream fails the test on a Delete before SnapshotDone.
		sameEntries(t, ks.String()+" snapshot after deletes", s.snapshot(), map[string]store.Entry{
			"a": {Key: "a", Value: []byte("a"), Revision: ra},
			"c": {Key: "c", Value: []byte("c2"), Revision: rc},
		})
		stop()
	}
}

// testWatchNoGap writes continuously while a watch starts. Every write that
// starts after Watch returned must be delivered or superseded by a later
// delivered event of its key, and replaying the watch must reproduce the
// final listing.
func testWatchNoGap(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	const keys, after = 5, 100 // keys written round-robin; writes after Watch returned
	type write struct {
		key string
		rev store.Revision
	}
	var (
		watching atomic.Bool
		mu       sync.Mutex
		mustSee  []write // writes started after Watch returned
		wg       sync.WaitGroup
		started  = make(chan struct{})
		errs     = make(chan error, 1)
	)
	revs := make([]store.Revision, keys) // owned by the writer until wg.Wait
	wg.Go(func() {
		n := 0
		for i := 0; ; i++ {
			late := watching.Load()
			k := i % keys
			key := fmt.Sprintf("race.%d", k)
			ctx, cancel := opCtx(st)
			var rev store.Revision
			var ok bool
			var err error
			if revs[k] == 0 {
				rev, ok, err = st.Create(ctx, store.Durable, key, fmt.Appendf(nil, "%d", i))
			} else {
				rev, ok, err = st.Update(ctx, store.Durable, key, fmt.Appendf(nil, "%d", i), revs[k])
			}
			cancel()
			if err != nil || !ok {
				errs <- fmt.Errorf("write %d of %q: won=%v err=%v; the only writer must win", i, key, ok, err)
				return
			}
			revs[k] = rev
			if i == 20 {
				close(started)
			}
			if late {
				mu.Lock()
				mustSee = append(mustSee, write{key, rev})
				mu.Unlock()
				if n++; n == after {
					return
				}
			}
		}
	})
	select {
	case <-started:
	case err := <-errs:
		t.Fatal(err)
	}
	s, stop := openStream(t, st, store.Durable, "race.")
	defer stop()
	watching.Store(true)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	finals := map[string]final{}
	for k, rev := range revs {
		finals[fmt.Sprintf("race.%d", k)] = final{rev: rev}
	}
	r := newReplica()
	delivered := map[write]bool{}
	newest := map[string]store.Revision{} // highest revision delivered per key
	s.awaitFinal(finals, func(ev store.WatchEvent) {
		r.apply(ev)
		delivered[write{ev.Entry.Key, ev.Entry.Revision}] = true
		newest[ev.Entry.Key] = max(newest[ev.Entry.Key], ev.Entry.Revision)
	})
	// A write may be collapsed into a later write of the same key
	// (history-1 backends drop superseded revisions), but never lost.
	for _, w := range mustSee {
		if !delivered[w] && newest[w.key] <= w.rev {
			t.Fatalf("the write of %q at revision %d started after Watch returned but was neither delivered nor superseded by a later event", w.key, w.rev)
		}
	}
	sameEntries(t, "replayed watch vs List", r.live, list(t, st, store.Durable, "race."))
}

func testWatchStop(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := watchStream(t, ctx, st, store.Durable, "")
	w := s.w
	s.snapshot()
	mustCreate(t, st, store.Durable, "k", nil)
	w.Stop()
	w.Stop() // a second Stop is allowed
	s.awaitClosed()
	if err := w.Err(); err != nil {
		t.Fatalf("Err after Stop = %v; want nil", err)
	}
	mustCreate(t, st, store.Durable, "k2", nil) // the store still works
}

func testWatchCancel(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := watchStream(t, ctx, st, store.Durable, "")
	w := s.w
	defer w.Stop()
	s.snapshot()
	mustCreate(t, st, store.Durable, "k", nil)
	cancel()
	s.awaitClosed()
	if err := w.Err(); err != nil {
		t.Fatalf("Err after the context was cancelled = %v; want nil", err)
	}
	mustCreate(t, st, store.Durable, "k2", nil)
}

// otherKeyspace returns the keyspace that is not ks.
func otherKeyspace(ks store.Keyspace) store.Keyspace {
	if ks == store.Ephemeral {
		return store.Durable
	}
	return store.Ephemeral
}
