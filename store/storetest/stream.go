package storetest

import (
	"context"
	"time"

	"github.com/spate-go/coordination/store"
)

// stream reads a watch and checks, on every event, the rules that hold for
// any watch: exactly one SnapshotDone, no Delete in the snapshot, no event
// with revision 0, and each key's events in revision order (a repeat of the
// same revision is an allowed duplicate).
type stream struct {
	t        tester
	w        store.Watcher
	what     string
	snapDone bool
	last     map[string]store.Revision // highest revision seen per key
}

// openStream starts a watch with a context that lives until stop is called;
// the caller must call stop (it stops the watch and cancels the context).
func openStream(t tester, st store.Store, ks store.Keyspace, prefix string) (s *stream, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s = watchStream(t, ctx, st, ks, prefix)
	return s, func() { s.w.Stop(); cancel() }
}

// watchStream starts a watch with ctx, failing the test if Watch fails. The
// caller ends it through ctx or s.w.Stop.
func watchStream(t tester, ctx context.Context, st store.Store, ks store.Keyspace, prefix string) *stream {
	t.Helper()
	w, err := st.Watch(ctx, ks, prefix)
	if err != nil {
		t.Fatalf("Watch(%s, %q): %v", ks, prefix, err)
	}
	return &stream{t: t, w: w, what: "watch(" + ks.String() + ", " + prefix + ")", last: make(map[string]store.Revision)}
}

// next returns the next event, or ok=false once Events is closed. It fails
// the test if nothing arrives within eventTimeout.
func (s *stream) next() (ev store.WatchEvent, ok bool) {
	s.t.Helper()
	timer := time.NewTimer(eventTimeout)
	defer timer.Stop()
	select {
	case ev, ok = <-s.w.Events():
	case <-timer.C:
		s.t.Fatalf("%s: no event within %v", s.what, eventTimeout)
	}
	if ok {
		s.check(ev)
	}
	return ev, ok
}

// check applies the per-event rules.
func (s *stream) check(ev store.WatchEvent) {
	s.t.Helper()
	switch ev.Kind {
	case store.SnapshotDone:
		if s.snapDone {
			s.t.Fatalf("%s: a second SnapshotDone; want exactly one", s.what)
		}
		s.snapDone = true
		return
	case store.Delete:
		if !s.snapDone {
			s.t.Fatalf("%s: Delete of %q in the snapshot; the snapshot holds only live keys", s.what, ev.Entry.Key)
		}
	case store.Put:
	default:
		s.t.Fatalf("%s: event of unknown kind %d", s.what, ev.Kind)
	}
	k, rev := ev.Entry.Key, ev.Entry.Revision
	if rev == 0 {
		s.t.Fatalf("%s: %v of %q with revision 0", s.what, ev.Kind, k)
	}
	if last, seen := s.last[k]; seen && rev < last {
		s.t.Fatalf("%s: %v of %q at revision %d after revision %d; events of a key must arrive in revision order", s.what, ev.Kind, k, rev, last)
	}
	s.last[k] = rev
}

// mustNext is next that fails the test if the watch ended.
func (s *stream) mustNext() store.WatchEvent {
	s.t.Helper()
	ev, ok := s.next()
	if !ok {
		s.t.Fatalf("%s: ended unexpectedly (Err %v)", s.what, s.w.Err())
	}
	return ev
}

// snapshot reads through SnapshotDone and returns the snapshot by key (the
// later event of a key delivered twice).
func (s *stream) snapshot() map[string]store.Entry {
	s.t.Helper()
	out := make(map[string]store.Entry)
	for {
		ev := s.mustNext()
		if ev.Kind == store.SnapshotDone {
			return out
		}
		out[ev.Entry.Key] = ev.Entry
	}
}

// until reads events, applying each to fold, until stop reports true for one
// of them (which is also folded).
func (s *stream) until(stop func(store.WatchEvent) bool, fold func(store.WatchEvent)) {
	s.t.Helper()
	for {
		ev := s.mustNext()
		if fold != nil {
			fold(ev)
		}
		if stop(ev) {
			return
		}
	}
}

// awaitClosed reads until Events is closed and fails the test if that takes
// longer than eventTimeout.
func (s *stream) awaitClosed() {
	s.t.Helper()
	deadline := time.Now().Add(eventTimeout)
	for time.Now().Before(deadline) {
		if _, ok := s.next(); !ok {
			return
		}
	}
	s.t.Fatalf("%s: Events not closed within %v", s.what, eventTimeout)
}

// replica folds watch events into a key-value view the way the coordinator
// does (SPEC §8.6): a Put applies only above the last revision applied for
// its key, a Delete only above the last Put applied.
type replica struct {
	live    map[string]store.Entry
	lastPut map[string]store.Revision
	applied map[string]store.Revision
}

func newReplica() *replica {
	return &replica{live: map[string]store.Entry{}, lastPut: map[string]store.Revision{}, applied: map[string]store.Revision{}}
}

// apply folds one event.
func (r *replica) apply(ev store.WatchEvent) {
	k, rev := ev.Entry.Key, ev.Entry.Revision
	switch ev.Kind {
	case store.Put:
		if rev > r.applied[k] {
			r.live[k] = ev.Entry
			r.applied[k] = rev
			r.lastPut[k] = rev
		}
	case store.Delete:
		if rev > r.lastPut[k] {
			delete(r.live, k)
			r.applied[k] = max(r.applied[k], rev)
		}
	}
}

// sameEntries fails the test naming what unless got and want hold the same
// keys with the same values and revisions; skip names keys to ignore.
func sameEntries(t tester, what string, got, want map[string]store.Entry, skip ...string) {
	t.Helper()
	ignore := map[string]bool{}
	for _, k := range skip {
		ignore[k] = true
	}
	for k, w := range want {
		if ignore[k] {
			continue
		}
		g, ok := got[k]
		if !ok {
			t.Fatalf("%s: %q missing (want %s at revision %d)", what, k, short(w.Value), w.Revision)
		}
		wantEntry(t, what, g, w.Value, w.Revision)
	}
	for k, g := range got {
		if _, ok := want[k]; !ok && !ignore[k] {
			t.Fatalf("%s: unexpected %q = %s at revision %d", what, k, short(g.Value), g.Revision)
		}
	}
}
