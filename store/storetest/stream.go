package storetest

import (
	"context"
	"fmt"
	"time"

	"github.com/spate-go/coordination/store"
)

// stream reads a watch and checks, on every event, the rules that hold for
// any watch: exactly one SnapshotDone, no Delete in the snapshot, no event
// with revision 0, and each key's events in revision order (a repeat of the
// same revision is an allowed duplicate). Its waits end by the check's
// deadline.
type stream struct {
	t        tester
	w        store.Watcher
	b        *budget
	what     string
	snapDone bool
	last     map[string]store.Revision // highest revision seen per key
	seen     map[eventID]bool          // every Put and Delete read so far
	dup      bool                      // the last event read was in seen already
	closed   bool                      // Events was closed (set by nextOrQuiet)
}

// eventID identifies an event, so that a duplicate is recognised.
type eventID struct {
	kind store.EventKind
	key  string
	rev  store.Revision
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
	return &stream{
		t: t, w: w, b: budgetOf(st),
		what: "watch(" + ks.String() + ", " + prefix + ")",
		last: make(map[string]store.Revision), seen: make(map[eventID]bool),
	}
}

// wait returns how long the stream may wait for one event: eventTimeout,
// cut short by the check's deadline.
func (s *stream) wait() time.Duration {
	return max(min(eventTimeout, time.Until(s.b.end())), 0)
}

// next returns the next event, or ok=false once Events is closed. It fails
// the test if nothing arrives within eventTimeout or by the check's
// deadline.
func (s *stream) next() (ev store.WatchEvent, ok bool) {
	s.t.Helper()
	wait := s.wait()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case ev, ok = <-s.w.Events():
	case <-timer.C:
		s.b.timedOut("an event of " + s.what)
		s.t.Fatalf("%s: no event within %v (snapshot done: %v)", s.what, wait.Round(time.Millisecond), s.snapDone)
	}
	if ok {
		s.check(ev)
	}
	return ev, ok
}

// nextNew is mustNext that skips duplicates: Puts and Deletes read before.
func (s *stream) nextNew() store.WatchEvent {
	s.t.Helper()
	for {
		if ev := s.mustNext(); !s.dup {
			return ev
		}
	}
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
		s.dup = false
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
	id := eventID{ev.Kind, k, rev}
	s.dup = s.seen[id]
	s.seen[id] = true
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

// final is the state a key must reach on a watch: live at rev (a Put at
// rev), or deleted after rev (a Delete above rev).
type final struct {
	rev     store.Revision
	deleted bool
}

// awaitFinal reads events, applying each to fold, until every key of want
// has reached its final state. It waits for each key's own event, never for
// a marker key: events of different keys may arrive in any order. It fails
// naming the keys still missing when the watch goes quiet or ends.
func (s *stream) awaitFinal(want map[string]final, fold func(store.WatchEvent)) {
	s.t.Helper()
	missing := func() (n int, example string) {
		for k, f := range want {
			if last, ok := s.last[k]; !ok || last < f.rev || (f.deleted && last == f.rev) {
				if n++; example == "" || k < example {
					example = k
				}
			}
		}
		return n, example
	}
	for {
		n, example := missing()
		if n == 0 && s.snapDone {
			return
		}
		ev, ok := s.nextOrQuiet()
		if !ok {
			f := want[example]
			state := fmt.Sprintf("a Put at revision %d", f.rev)
			if f.deleted {
				state = fmt.Sprintf("a Delete above revision %d", f.rev)
			}
			s.t.Fatalf("%s: %d of %d keys never reached their final state (watch closed: %v, Err %v, snapshot done: %v); for example %q: want %s, last saw revision %d",
				s.what, n, len(want), s.closed, s.w.Err(), s.snapDone, example, state, s.last[example])
		}
		if fold != nil {
			fold(ev)
		}
	}
}

// awaitClosed reads until Events is closed and fails the test if that takes
// longer than eventTimeout or runs past the check's deadline.
func (s *stream) awaitClosed() {
	s.t.Helper()
	wait := s.wait()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if _, ok := s.next(); !ok {
			return
		}
	}
	s.b.timedOut("the end of " + s.what)
	s.t.Fatalf("%s: Events not closed within %v", s.what, wait.Round(time.Millisecond))
}

// replica folds watch events into a key-value view the way the coordinator
// does (docs/protocol.md, "Watches and reconcile"): a Put applies only above
// the last revision applied for its key, a Delete only above the last Put
// applied.
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
