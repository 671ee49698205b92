package memstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// ttl is the lease TTL of the unit tests' stores; they run on a mock clock,
// so its size costs no time.
const ttl = 30 * time.Second

// newMock returns a store on a fresh mock clock, closed at cleanup.
func newMock(t testing.TB, opts ...Option) (*Store, *clock.Mock) {
	t.Helper()
	clk := clock.NewMock()
	st := New(ttl, append([]Option{WithClock(clk)}, opts...)...)
	t.Cleanup(func() { st.Close() })
	return st, clk
}

// mustCreate creates key and fails the test unless it wins.
func mustCreate(t testing.TB, st store.Store, ks store.Keyspace, key, value string) store.Revision {
	t.Helper()
	rev, ok, err := st.Create(context.Background(), ks, key, []byte(value))
	if err != nil || !ok {
		t.Fatalf("Create(%s, %q) = %d, %v, %v; want a win", ks, key, rev, ok, err)
	}
	return rev
}

// mustUpdate updates key at expected and fails the test unless it wins.
func mustUpdate(t testing.TB, st store.Store, ks store.Keyspace, key, value string, expected store.Revision) store.Revision {
	t.Helper()
	rev, ok, err := st.Update(context.Background(), ks, key, []byte(value), expected)
	if err != nil || !ok {
		t.Fatalf("Update(%s, %q, rev %d) = %d, %v, %v; want a win", ks, key, expected, rev, ok, err)
	}
	return rev
}

// isLive reports whether key is live, failing the test on an error.
func isLive(t testing.TB, st store.Store, ks store.Keyspace, key string) bool {
	t.Helper()
	_, ok, err := st.Get(context.Background(), ks, key)
	if err != nil {
		t.Fatalf("Get(%s, %q): %v", ks, key, err)
	}
	return ok
}

// mustWatch opens a watch, reads its snapshot through SnapshotDone and
// returns the watcher and the snapshot's entries. The watch is stopped at
// cleanup.
func mustWatch(t testing.TB, st store.Store, ks store.Keyspace, prefix string) (store.Watcher, []store.Entry) {
	t.Helper()
	w, err := st.Watch(context.Background(), ks, prefix)
	if err != nil {
		t.Fatalf("Watch(%s, %q): %v", ks, prefix, err)
	}
	t.Cleanup(w.Stop)
	var snap []store.Entry
	for ev := range w.Events() {
		switch ev.Kind {
		case store.Put:
			snap = append(snap, ev.Entry)
		case store.SnapshotDone:
			return w, snap
		default:
			t.Fatalf("snapshot event %v %q; want only puts", ev.Kind, ev.Entry.Key)
		}
	}
	t.Fatalf("watch ended before SnapshotDone: %v", w.Err())
	return nil, nil
}

// pending returns the events buffered in w without blocking, and whether
// Events is closed.
func pending(w store.Watcher) (evs []store.WatchEvent, closed bool) {
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				return evs, true
			}
			evs = append(evs, ev)
		default:
			return evs, false
		}
	}
}

// wantErr fails the test unless err is a *coordination.Error of kind with
// exactly reason.
func wantErr(t testing.TB, err error, kind coordination.ErrorKind, reason string) {
	t.Helper()
	var ce *coordination.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v; want a *coordination.Error", err)
	}
	if ce.Kind != kind || ce.Reason != reason {
		t.Fatalf("error (%s) %q; want (%s) %q", ce.Kind, ce.Reason, kind, reason)
	}
}
