package natsstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

func TestSubjectFilter(t *testing.T) {
	tests := []struct{ prefix, want string }{
		{"", ">"},
		{"sp", ">"},
		{"split", ">"},
		{"split.", "split.>"},
		{"split.a", "split.>"},
		{"a.b.c", "a.b.>"},
		{"a.b.", "a.b.>"},
		{".a", ">"},
		{"a..b", ">"},
		{"a*.b", ">"},
		{"a>.b", ">"},
		{"x y.z", ">"},
		{"a/b=c_d-e.f", "a/b=c_d-e.>"},
	}
	for _, tc := range tests {
		t.Run(tc.prefix, func(t *testing.T) {
			if got := subjectFilter(tc.prefix); got != tc.want {
				t.Fatalf("subjectFilter(%q) = %q, want %q", tc.prefix, got, tc.want)
			}
		})
	}
}

// snapshot reads a watch's snapshot: the keys of its Puts, until
// SnapshotDone.
func snapshot(t testing.TB, w store.Watcher) []string {
	t.Helper()
	var keys []string
	for {
		ev := nextEvent(t, w, 5*time.Second)
		switch ev.Kind {
		case store.SnapshotDone:
			slices.Sort(keys)
			return keys
		case store.Put:
			keys = append(keys, ev.Entry.Key)
		default:
			t.Fatalf("snapshot holds %v for %s", ev.Kind, ev.Entry.Key)
		}
	}
}

func TestWatchSnapshotAndPrefix(t *testing.T) {
	st := storeFor(t, startServer(t))
	ctx := opCtx(t)
	// Snapshot of an empty bucket.
	w, err := st.Watch(t.Context(), store.Durable, "")
	if err != nil {
		t.Fatal(err)
	}
	if keys := snapshot(t, w); len(keys) != 0 {
		t.Fatalf("empty bucket snapshot %v", keys)
	}
	w.Stop()
	for _, k := range []string{"split.a", "spec.b", "split.b.c", "plan", "other.x"} {
		mustCreate(t, st, store.Durable, k, "v")
	}
	r := mustCreate(t, st, store.Durable, "split.gone", "v")
	if ok, err := st.Delete(ctx, store.Durable, "split.gone", r); !ok || err != nil {
		t.Fatal(ok, err)
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"", []string{"other.x", "plan", "spec.b", "split.a", "split.b.c"}},
		{"sp", []string{"spec.b", "split.a", "split.b.c"}},
		{"split.", []string{"split.a", "split.b.c"}},
		{"split.b", []string{"split.b.c"}},
		{"spli", []string{"split.a", "split.b.c"}},
		{"nothing", nil},
		{"nothing.here", nil},
		{"split.gone", nil},
		{"split.z", nil},
	}
	for _, tc := range tests {
		t.Run(tc.prefix, func(t *testing.T) {
			w, err := st.Watch(t.Context(), store.Durable, tc.prefix)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			if got := snapshot(t, w); !slices.Equal(got, tc.want) {
				t.Fatalf("snapshot %v, want %v", got, tc.want)
			}
			lst, err := st.List(ctx, store.Durable, tc.prefix)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, e := range lst {
				keys = append(keys, e.Key)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, tc.want) {
				t.Fatalf("List %v, want %v", keys, tc.want)
			}
		})
	}
	// Only keys outside the prefix exist in the other keyspace's bucket.
	mustCreate(t, st, store.Ephemeral, "worker.1", "v")
	w, err = st.Watch(t.Context(), store.Ephemeral, "lease.")
	if err != nil {
		t.Fatal(err)
	}
	if keys := snapshot(t, w); len(keys) != 0 {
		t.Fatalf("snapshot %v, want none", keys)
	}
	// The tail: puts and deletes under the prefix, nothing outside it.
	mustCreate(t, st, store.Ephemeral, "worker.2", "v")
	r = mustCreate(t, st, store.Ephemeral, "lease.1", "v")
	// Read the put before deleting: with one message per key, a delete that
	// lands first would replace the put before the watcher reads it.
	if ev := nextEvent(t, w, 5*time.Second); ev.Kind != store.Put || ev.Entry.Key != "lease.1" || ev.Entry.Revision != r || string(ev.Entry.Value) != "v" {
		t.Fatalf("tail event %+v", ev)
	}
	if ok, err := st.Delete(ctx, store.Ephemeral, "lease.1", 0); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ev := nextEvent(t, w, 5*time.Second); ev.Kind != store.Delete || ev.Entry.Key != "lease.1" || ev.Entry.Revision <= r {
		t.Fatalf("tail event %+v", ev)
	}
	w.Stop()
	if _, ok := <-w.Events(); ok || w.Err() != nil {
		t.Fatalf("after Stop: open=%v err=%v", ok, w.Err())
	}
}

func TestWatchEndings(t *testing.T) {
	srv := startServer(t)
	st := storeFor(t, srv)
	mustCreate(t, st, store.Durable, "k", "v")

	t.Run("context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		w, err := st.Watch(ctx, store.Durable, "")
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		for range w.Events() {
		}
		if w.Err() != nil {
			t.Fatalf("Err after cancel = %v", w.Err())
		}
	})
	t.Run("stop twice", func(t *testing.T) {
		w, err := st.Watch(t.Context(), store.Durable, "")
		if err != nil {
			t.Fatal(err)
		}
		w.Stop()
		w.Stop()
		if _, ok := <-w.Events(); ok || w.Err() != nil {
			t.Fatalf("open=%v err=%v", ok, w.Err())
		}
	})
	t.Run("overflow breaks", func(t *testing.T) {
		w, err := st.watch(t.Context(), store.Durable, "", 4)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		// Nobody reads; the snapshot (one key) and SnapshotDone fit, ten more
		// writes do not.
		for i := range 10 {
			mustCreate(t, st, store.Durable, fmt.Sprintf("o.%d", i), "v")
		}
		waitFor(t, 5*time.Second, "the watch to break", func() bool {
			select {
			case <-w.(*watcher).done:
				return true
			default:
				return false
			}
		})
		for range w.Events() {
		}
		wantKind(t, w.Err(), coordination.Retryable, "lagged by more than 4 events")
	})
	t.Run("snapshot larger than the buffer", func(t *testing.T) {
		w, err := st.watch(t.Context(), store.Durable, "o.", 2)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if keys := snapshot(t, w); len(keys) != 10 {
			t.Fatalf("snapshot of %d keys, want 10", len(keys))
		}
	})
	t.Run("close", func(t *testing.T) {
		st2 := storeFor(t, srv)
		w, err := st2.Watch(t.Context(), store.Durable, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := st2.Close(); err != nil {
			t.Fatal(err)
		}
		for range w.Events() {
		}
		if w.Err() != nil {
			t.Fatalf("Err after Close = %v", w.Err())
		}
		ctx := opCtx(t)
		_, _, err = st2.Create(ctx, store.Durable, "x", nil)
		wantKind(t, err, coordination.Fatal, "store is closed")
		_, _, err = st2.Get(ctx, store.Durable, "x")
		wantKind(t, err, coordination.Fatal, "store is closed")
		_, err = st2.Delete(ctx, store.Durable, "x", 0)
		wantKind(t, err, coordination.Fatal, "store is closed")
		_, _, err = st2.Update(ctx, store.Durable, "x", nil, 1)
		wantKind(t, err, coordination.Fatal, "store is closed")
		_, err = st2.Watch(ctx, store.Durable, "")
		wantKind(t, err, coordination.Fatal, "store is closed")
		_, err = st2.List(ctx, store.Durable, "")
		wantKind(t, err, coordination.Fatal, "store is closed")
		if err := st2.Close(); err != nil {
			t.Fatalf("second Close = %v", err)
		}
	})
}

// TestWatchNoGapForLatestState writes to a few keys while a watch starts
// and checks the no-gap rule as NATS keeps it: for every write made after
// Watch returned, the watch delivers that revision or a later event of the
// same key, and folding the watch as the coordinator does (docs/protocol.md,
// "Watches and reconcile")
// reproduces List.
func TestWatchNoGapForLatestState(t *testing.T) {
	st := storeFor(t, startServer(t))
	type write struct {
		key string
		rev store.Revision
		del bool
	}
	var (
		watching atomic.Bool
		mu       sync.Mutex
		mustSee  []write
		started  = make(chan struct{})
	)
	var wg sync.WaitGroup
	wg.Go(func() {
		revs := map[string]store.Revision{}
		n := 0
		for i := 0; n < 200; i++ {
			late := watching.Load()
			key := fmt.Sprintf("gap.%d", i%5)
			ctx := opCtx(t)
			w := write{key: key}
			var err error
			var ok bool
			switch rev := revs[key]; {
			case rev == 0:
				w.rev, ok, err = st.Create(ctx, store.Durable, key, fmt.Appendf(nil, "%d", i))
			case i%7 == 0:
				ok, err = st.Delete(ctx, store.Durable, key, rev)
				w.rev, w.del = rev, true
			default:
				w.rev, ok, err = st.Update(ctx, store.Durable, key, fmt.Appendf(nil, "%d", i), rev)
			}
			if err != nil || !ok {
				t.Errorf("write %d of %s: ok=%v err=%v", i, key, ok, err)
				return
			}
			revs[key] = w.rev
			if w.del {
				revs[key] = 0
			}
			if i == 20 {
				close(started)
			}
			if late {
				mu.Lock()
				mustSee = append(mustSee, w)
				mu.Unlock()
				n++
			}
		}
	})
	<-started
	w, err := st.Watch(t.Context(), store.Durable, "gap.")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	watching.Store(true)
	wg.Wait()
	end := mustCreate(t, st, store.Durable, "gap.end", "")

	live := map[string]store.Entry{}
	lastPut := map[string]store.Revision{}
	applied := map[string]store.Revision{}
	latest := map[string]store.Revision{} // highest revision of any event per key
	for {
		ev := nextEvent(t, w, 10*time.Second)
		k, rev := ev.Entry.Key, ev.Entry.Revision
		latest[k] = max(latest[k], rev)
		switch ev.Kind {
		case store.Put:
			if rev > applied[k] {
				live[k], applied[k], lastPut[k] = ev.Entry, rev, rev
			}
		case store.Delete:
			if rev > lastPut[k] {
				delete(live, k)
				applied[k] = max(applied[k], rev)
			}
		}
		if k == "gap.end" && rev == end {
			break
		}
	}
	for _, wr := range mustSee {
		if wr.del && latest[wr.key] <= wr.rev || !wr.del && latest[wr.key] < wr.rev {
			t.Fatalf("write %+v after the watch started: latest event of the key is at revision %d", wr, latest[wr.key])
		}
	}
	lst, err := st.List(opCtx(t), store.Durable, "gap.")
	if err != nil {
		t.Fatal(err)
	}
	if len(lst) != len(live) {
		t.Fatalf("List has %d keys, the folded watch %d", len(lst), len(live))
	}
	for _, e := range lst {
		if got := live[e.Key]; got.Revision != e.Revision || string(got.Value) != string(e.Value) {
			t.Fatalf("folded watch has %+v, List %+v", got, e)
		}
	}
	t.Logf("%d writes after the watch started, all reflected", len(mustSee))
}

// replayEntry is a jetstream.KeyValueEntry fed to a watch's loop.
type replayEntry struct {
	key string
	rev uint64
	op  jetstream.KeyValueOp
}

func (e replayEntry) Bucket() string                  { return "b" }
func (e replayEntry) Key() string                     { return e.key }
func (e replayEntry) Value() []byte                   { return []byte(e.key) }
func (e replayEntry) Revision() uint64                { return e.rev }
func (e replayEntry) Created() time.Time              { return time.Time{} }
func (e replayEntry) Delta() uint64                   { return 0 }
func (e replayEntry) Operation() jetstream.KeyValueOp { return e.op }

// replayWatcher is a jetstream.KeyWatcher whose updates are scripted.
type replayWatcher struct{ updates chan jetstream.KeyValueEntry }

func (r replayWatcher) Updates() <-chan jetstream.KeyValueEntry { return r.updates }
func (r replayWatcher) Stop() error                             { return nil }

// TestWatchReplayAbsorbsRacingDeletes feeds the loop the initial replays a
// history-1 bucket produces when writes race the watch's start: the
// client's replay is the consumer's initial pending count of messages, so a
// write that supersedes a message not yet delivered is counted into it. A
// delete so absorbed, made after the watch started (above the floor), must
// still reach the tail; older deletes are skipped.
func TestWatchReplayAbsorbsRacingDeletes(t *testing.T) {
	const floor = 10
	put := func(k string, rev uint64) replayEntry { return replayEntry{k, rev, jetstream.KeyValuePut} }
	del := func(k string, rev uint64) replayEntry { return replayEntry{k, rev, jetstream.KeyValueDelete} }
	ev := func(kind store.EventKind, k string, rev store.Revision) store.WatchEvent {
		e := store.WatchEvent{Kind: kind, Entry: store.Entry{Key: k, Revision: rev}}
		if kind == store.Put {
			e.Entry.Value = []byte(k)
		}
		return e
	}
	done := store.WatchEvent{Kind: store.SnapshotDone}
	tests := []struct {
		name   string
		prefix string
		replay []jetstream.KeyValueEntry // then the end-of-replay nil, then a put of prefix+"end"
		want   []store.WatchEvent        // before the put of prefix+"end"
	}{
		{
			// k was delivered, then deleted; an update that superseded an
			// initial message not yet delivered let the delete into the
			// replay.
			name:   "delete of a key already in the snapshot",
			replay: []jetstream.KeyValueEntry{put("a", 3), put("k", 5), del("k", 11)},
			want:   []store.WatchEvent{ev(store.Put, "a", 3), ev(store.Put, "k", 5), done, ev(store.Delete, "k", 11)},
		},
		{
			name:   "racing deletes, in revision order",
			replay: []jetstream.KeyValueEntry{put("a", 3), del("b", 12), del("c", 11)},
			want:   []store.WatchEvent{ev(store.Put, "a", 3), done, ev(store.Delete, "c", 11), ev(store.Delete, "b", 12)},
		},
		{
			name:   "a racing delete superseded by a put",
			replay: []jetstream.KeyValueEntry{del("k", 11), put("k", 12)},
			want:   []store.WatchEvent{ev(store.Put, "k", 12), done},
		},
		{
			name:   "deletes older than the watch",
			replay: []jetstream.KeyValueEntry{del("k", 4), put("a", 6), del("b", floor)},
			want:   []store.WatchEvent{ev(store.Put, "a", 6), done},
		},
		{
			name:   "a racing delete outside the prefix",
			prefix: "k.",
			replay: []jetstream.KeyValueEntry{del("x.k", 11), put("x.a", 12)},
			want:   []store.WatchEvent{done},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore(t, Config{Servers: []string{"nats://127.0.0.1:1"}, Job: "replay"})
			end := tc.prefix + "end"
			kw := replayWatcher{updates: make(chan jetstream.KeyValueEntry, len(tc.replay)+2)}
			for _, e := range tc.replay {
				kw.updates <- e
			}
			kw.updates <- nil
			kw.updates <- put(end, 99)
			w := &watcher{
				s: st, kw: kw, ks: store.Durable, prefix: tc.prefix, floor: floor, limit: 16,
				events: make(chan store.WatchEvent), stop: make(chan struct{}),
				brk: make(chan struct{}), done: make(chan struct{}),
			}
			errc := make(chan error, 1)
			go func() { errc <- w.loop(t.Context()) }()
			want := append(tc.want, ev(store.Put, end, 99))
			var got []store.WatchEvent
			for len(got) == 0 || got[len(got)-1].Entry.Key != end {
				got = append(got, nextEvent(t, w, 5*time.Second))
			}
			close(w.stop)
			if err := <-errc; err != nil {
				t.Fatalf("loop: %v", err)
			}
			if !slices.EqualFunc(got, want, func(a, b store.WatchEvent) bool {
				return a.Kind == b.Kind && a.Entry.Key == b.Entry.Key && a.Entry.Revision == b.Entry.Revision && string(a.Entry.Value) == string(b.Entry.Value)
			}) {
				t.Fatalf("events\n got %v\nwant %v", got, want)
			}
		})
	}
}
