package natsstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

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
		// After the snapshot, nobody reads: ten more writes do not fit.
		if keys := snapshot(t, w); !slices.Equal(keys, []string{"k"}) {
			t.Fatalf("snapshot %v, want [k]", keys)
		}
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

func put(k string, rev uint64) replayEntry { return replayEntry{k, rev, jetstream.KeyValuePut} }
func del(k string, rev uint64) replayEntry { return replayEntry{k, rev, jetstream.KeyValueDelete} }

// replayWatcher is a jetstream.KeyWatcher whose updates are scripted.
type replayWatcher struct{ updates chan jetstream.KeyValueEntry }

func (r replayWatcher) Updates() <-chan jetstream.KeyValueEntry { return r.updates }
func (r replayWatcher) Stop() error                             { return nil }

// scriptedWatch is a watch's loop running on a scripted replay: the test
// sends the client's updates, and last answers each read of the bucket's
// last sequence under the filter.
type scriptedWatch struct {
	*watcher
	kw   replayWatcher
	errc chan error
}

// runScripted starts the loop of a watch of prefix whose floor was read
// before its consumer was created; the loop ends at cleanup.
func runScripted(t *testing.T, prefix string, floor uint64, last func() (uint64, error)) *scriptedWatch {
	t.Helper()
	st := newStore(t, Config{Servers: []string{"nats://127.0.0.1:1"}, Job: "replay"})
	kw := replayWatcher{updates: make(chan jetstream.KeyValueEntry, 64)}
	sw := &scriptedWatch{
		watcher: &watcher{
			s: st, kw: kw, ks: store.Durable, prefix: prefix, bucket: "b", floor: floor, limit: 16,
			last:   func(context.Context) (uint64, error) { return last() },
			events: make(chan store.WatchEvent), stop: make(chan struct{}),
			brk: make(chan struct{}), done: make(chan struct{}),
		},
		kw:   kw,
		errc: make(chan error, 1),
	}
	go func() {
		sw.errc <- sw.loop(t.Context())
		close(sw.events)
	}()
	t.Cleanup(sw.end)
	return sw
}

// send feeds the loop updates; nil is the client's end-of-initial-values
// marker.
func (sw *scriptedWatch) send(es ...jetstream.KeyValueEntry) {
	for _, e := range es {
		sw.kw.updates <- e
	}
}

// end stops the loop and waits until it has returned.
func (sw *scriptedWatch) end() {
	sw.stopOnce.Do(func() { close(sw.stop) })
	for range sw.events {
	}
}

// until reads events up to and including the first one that matches.
func (sw *scriptedWatch) until(t *testing.T, match func(store.WatchEvent) bool) []store.WatchEvent {
	t.Helper()
	var got []store.WatchEvent
	for len(got) == 0 || !match(got[len(got)-1]) {
		select {
		case ev, ok := <-sw.events:
			if !ok {
				t.Fatalf("loop ended after %v: %v", got, <-sw.errc)
			}
			got = append(got, ev)
		case <-time.After(5 * time.Second):
			t.Fatalf("no watch event within 5s after %v", got)
		}
	}
	return got
}

// wev is a watch event of a scripted replay: a Put's value is its key.
func wev(kind store.EventKind, k string, rev store.Revision) store.WatchEvent {
	e := store.WatchEvent{Kind: kind, Entry: store.Entry{Key: k, Revision: rev}}
	if kind == store.Put {
		e.Entry.Value = []byte(k)
	}
	return e
}

var snapshotDone = store.WatchEvent{Kind: store.SnapshotDone}

func isDone(ev store.WatchEvent) bool { return ev.Kind == store.SnapshotDone }

// sameEvents fails unless got and want hold the same events in order.
func sameEvents(t *testing.T, got, want []store.WatchEvent) {
	t.Helper()
	if !slices.EqualFunc(got, want, func(a, b store.WatchEvent) bool {
		return a.Kind == b.Kind && a.Entry.Key == b.Entry.Key && a.Entry.Revision == b.Entry.Revision && string(a.Entry.Value) == string(b.Entry.Value)
	}) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
}

// TestWatchReplayAbsorbsRacingDeletes feeds the loop the initial replays a
// history-1 bucket produces when writes race the watch's start: a write
// that supersedes a message not yet delivered lands in the replay. A
// delete so absorbed, made after the watch started (above the floor), must
// still reach the tail; older deletes are skipped.
func TestWatchReplayAbsorbsRacingDeletes(t *testing.T) {
	const floor = 10
	tests := []struct {
		name   string
		prefix string
		replay []jetstream.KeyValueEntry // the bucket's last sequence is the highest here
		want   []store.WatchEvent        // up to a put of prefix+"end" made after SnapshotDone
	}{
		{
			// k was delivered, then deleted; an update that superseded an
			// initial message not yet delivered let the delete into the
			// replay.
			name:   "delete of a key already in the snapshot",
			replay: []jetstream.KeyValueEntry{put("a", 3), put("k", 5), del("k", 11)},
			want:   []store.WatchEvent{wev(store.Put, "a", 3), wev(store.Put, "k", 5), snapshotDone, wev(store.Delete, "k", 11)},
		},
		{
			// Replayed in sequence order, as a consumer delivers them (a
			// delete replayed after the bucket's last sequence would race
			// the snapshot's end, which may come first); held back, they
			// come out in revision order, not in key order.
			name:   "racing deletes, in revision order",
			replay: []jetstream.KeyValueEntry{put("a", 3), del("d", 11), del("c", 12), del("b", 13)},
			want:   []store.WatchEvent{wev(store.Put, "a", 3), snapshotDone, wev(store.Delete, "d", 11), wev(store.Delete, "c", 12), wev(store.Delete, "b", 13)},
		},
		{
			name:   "a racing delete superseded by a put",
			replay: []jetstream.KeyValueEntry{del("k", 11), put("k", 12)},
			want:   []store.WatchEvent{wev(store.Put, "k", 12), snapshotDone},
		},
		{
			name:   "deletes older than the watch",
			replay: []jetstream.KeyValueEntry{del("k", 4), put("a", 6), del("b", floor)},
			want:   []store.WatchEvent{wev(store.Put, "a", 6), snapshotDone},
		},
		{
			// A consumer on a replica behind the leader replays k's older
			// put, then the delete that the floor (read from the leader)
			// already covers.
			name:   "a delete older than the watch after its key's put",
			replay: []jetstream.KeyValueEntry{put("k", 4), put("a", 6), del("k", 8)},
			want:   []store.WatchEvent{wev(store.Put, "k", 4), wev(store.Put, "a", 6), snapshotDone, wev(store.Delete, "k", 8)},
		},
		{
			name:   "a racing delete outside the prefix",
			prefix: "k.",
			replay: []jetstream.KeyValueEntry{del("x.k", 11), put("x.a", 12)},
			want:   []store.WatchEvent{snapshotDone},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var last uint64
			for _, e := range tc.replay {
				last = max(last, e.Revision())
			}
			sw := runScripted(t, tc.prefix, floor, func() (uint64, error) { return last, nil })
			sw.send(tc.replay...)
			sw.send(nil)
			got := sw.until(t, isDone)
			end := tc.prefix + "end"
			sw.send(put(end, 99))
			got = append(got, sw.until(t, func(ev store.WatchEvent) bool { return ev.Entry.Key == end })...)
			sameEvents(t, got, append(tc.want, wev(store.Put, end, 99)))
		})
	}
}

// TestWatchSnapshotEnd checks where the loop ends a snapshot: once the
// replay has delivered the bucket's last sequence under the filter, read
// after that delivery, and never on the client's end-of-replay marker
// alone. The server's pending count, which the marker follows, runs low
// while writes supersede undelivered messages, so the marker can come with
// much of the replay still to be delivered.
func TestWatchSnapshotEnd(t *testing.T) {
	errRead := errors.New("read failed")
	tests := []struct {
		name   string
		floor  uint64                    // the last sequence before the consumer was created
		last   []uint64                  // answers of the reads after it, the final one repeated
		replay []jetstream.KeyValueEntry // nil is the client's marker
		want   []store.WatchEvent        // up to SnapshotDone and the tail put of "end" after it
	}{
		{
			name:   "the client's marker comes early",
			floor:  3,
			last:   []uint64{3},
			replay: []jetstream.KeyValueEntry{put("a", 1), nil, put("b", 2), put("c", 3)},
			want:   []store.WatchEvent{wev(store.Put, "a", 1), wev(store.Put, "b", 2), wev(store.Put, "c", 3), snapshotDone},
		},
		{
			// A key updated while the replay runs, whose older message
			// was replaced before its turn: the read after the floor
			// finds the later write, and the snapshot waits for it.
			name:   "writes land during the replay",
			floor:  3,
			last:   []uint64{5},
			replay: []jetstream.KeyValueEntry{put("a", 1), put("c", 3), nil, put("b", 5)},
			want:   []store.WatchEvent{wev(store.Put, "a", 1), wev(store.Put, "c", 3), wev(store.Put, "b", 5), snapshotDone},
		},
		{
			// The replica serving the consumer ends its replay (marker)
			// before it has the floor; its later deliveries complete it.
			name:   "the replica is behind the leader",
			floor:  4,
			last:   []uint64{4},
			replay: []jetstream.KeyValueEntry{put("a", 1), put("b", 2), nil, put("c", 4)},
			want:   []store.WatchEvent{wev(store.Put, "a", 1), wev(store.Put, "b", 2), wev(store.Put, "c", 4), snapshotDone},
		},
		{
			// The message at the floor went away (an expired limit
			// marker) with nothing after it: the marker's read ends the
			// snapshot.
			name:   "the floor's message is gone",
			floor:  3,
			last:   []uint64{1},
			replay: []jetstream.KeyValueEntry{put("a", 1), nil},
			want:   []store.WatchEvent{wev(store.Put, "a", 1), snapshotDone},
		},
		{
			name:   "nothing under the filter",
			floor:  0,
			last:   []uint64{5},
			replay: []jetstream.KeyValueEntry{put("a", 5), nil},
			want:   []store.WatchEvent{snapshotDone, wev(store.Put, "a", 5)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var reads atomic.Int64
			sw := runScripted(t, "", tc.floor, func() (uint64, error) {
				n := int(reads.Add(1)) - 1
				return tc.last[min(n, len(tc.last)-1)], nil
			})
			sw.send(tc.replay...)
			got := sw.until(t, isDone)
			sw.send(put("end", 99))
			got = append(got, sw.until(t, func(ev store.WatchEvent) bool { return ev.Entry.Key == "end" })...)
			sameEvents(t, got, append(tc.want, wev(store.Put, "end", 99)))
		})
	}
	t.Run("a failed read breaks the watch", func(t *testing.T) {
		sw := runScripted(t, "", 1, func() (uint64, error) { return 0, errRead })
		sw.send(put("a", 1))
		select {
		case err := <-sw.errc:
			wantKind(t, err, coordination.Retryable, "reading the bucket's last sequence", errRead.Error())
		case <-time.After(5 * time.Second):
			t.Fatal("the watch did not break")
		}
	})
	// The client refusing the read while it reconnects is a lost
	// connection, and the error says so (as the failover tests expect).
	t.Run("a read refused while disconnected says the connection was lost", func(t *testing.T) {
		sw := runScripted(t, "", 1, func() (uint64, error) { return 0, nats.ErrReconnectBufExceeded })
		sw.send(put("a", 1))
		select {
		case err := <-sw.errc:
			wantKind(t, err, coordination.Retryable, "connection to NATS lost while reading the bucket's last sequence")
		case <-time.After(5 * time.Second):
			t.Fatal("the watch did not break")
		}
	})
}

// TestListReadsToTheSnapshotEnd feeds a listing a scripted replay: it
// ends where a watch's snapshot ends, not on the client's early marker, and
// holds each key once, at its latest revision, without keys the replay saw
// deleted, in revision order.
func TestListReadsToTheSnapshotEnd(t *testing.T) {
	st := newStore(t, Config{Servers: []string{"nats://127.0.0.1:1"}, Job: "replay"})
	kw := replayWatcher{updates: make(chan jetstream.KeyValueEntry, 16)}
	for _, e := range []jetstream.KeyValueEntry{put("k", 1), put("a", 2), put("d", 3), nil, put("k", 5), del("d", 6), put("x", 7), put("b", 8)} {
		kw.updates <- e
	}
	l := listing{s: st, ks: store.Durable, prefix: "", bucket: "b", last: func(context.Context) (uint64, error) { return 8, nil }}
	got, err := l.read(t.Context(), kw, 8)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Entry{wev(store.Put, "a", 2).Entry, wev(store.Put, "k", 5).Entry, wev(store.Put, "x", 7).Entry, wev(store.Put, "b", 8).Entry}
	if !slices.EqualFunc(got, want, func(a, b store.Entry) bool {
		return a.Key == b.Key && a.Revision == b.Revision && string(a.Value) == string(b.Value)
	}) {
		t.Fatalf("List = %v, want %v", got, want)
	}
}
