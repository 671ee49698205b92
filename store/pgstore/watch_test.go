package pgstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
)

func TestWatchBehindTheRetentionBreaks(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	// The watch's store has one pooled connection, held by the test while
	// another handle writes 20 changes and prunes them: the watch cannot
	// read one of them before they are gone, however the machine schedules
	// it (a catch-up that ran after the writes and before a prune would
	// read them all and deliver them). The lease is long enough that the
	// wait for the connection does not end the watch by itself (a watch
	// breaks once no catch-up landed for a lease).
	const lease = time.Minute
	st := newStore(t, s, Config{MaxConns: 1}, lease)
	w, err := st.Watch(opCtx(t), store.Durable, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := nextEvent(t, w, 5*time.Second); ev.Kind != store.SnapshotDone {
		t.Fatalf("first event %v", ev.Kind)
	}
	conn, err := st.pool.Acquire(opCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	release := sync.OnceFunc(conn.Release)
	t.Cleanup(release)
	writer := newStore(t, s, Config{Job: st.cfg.Job}, lease)
	var last store.Revision
	for i := range 20 {
		last = mustCreate(t, writer, store.Durable, fmt.Sprintf("k%02d", i), "v")
	}
	waitFor(t, 10*time.Second, "the change log pruned", func() bool {
		count(t, writer, "SELECT {s}.prune_changes(1, 10000)") // a retention of 1 µs
		return count(t, writer, "SELECT pruned_upto FROM {s}.meta") >= int64(last)
	})
	release()
	deadline := time.After(10 * time.Second)
	for ended := false; !ended; {
		select {
		case ev, ok := <-w.Events():
			if ended = !ok; ok {
				t.Errorf("the watch delivered %v %q, a change pruned before it could read it", ev.Kind, ev.Entry.Key)
			}
		case <-deadline:
			t.Fatal("the watch did not end within 10s of falling behind the retention")
		}
	}
	wantKind(t, w.Err(), coordination.Retryable, "retention", "watch again")
}

func TestWatchBreaksWhenItsListenConnectionIsLost(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	st := newStore(t, s, Config{}, testTTL)
	w, err := st.Watch(opCtx(t), store.Durable, "p.")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := nextEvent(t, w, 5*time.Second); ev.Kind != store.SnapshotDone {
		t.Fatalf("first event %v", ev.Kind)
	}
	exec(t, s, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN%'", "spate-coordination "+st.cfg.Job)
	wantKind(t, endOf(t, w, 5*time.Second), coordination.Retryable, "LISTEN connection", "watch again")
	// A new watch dials a new LISTEN connection and sees new writes.
	w2, err := st.Watch(opCtx(t), store.Durable, "p.")
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	nextEvent(t, w2, 5*time.Second) // SnapshotDone
	rev := mustCreate(t, st, store.Durable, "p.after", "v")
	if ev := nextEvent(t, w2, 5*time.Second); ev.Kind != store.Put || ev.Entry.Revision != rev {
		t.Errorf("after the rewatch: %v %q rev %d, want the put at %d", ev.Kind, ev.Entry.Key, ev.Entry.Revision, rev)
	}
}

func TestWatchDeliversOnlyItsPrefix(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	st := newStore(t, s, Config{}, testTTL)
	w, err := st.Watch(opCtx(t), store.Durable, "a.")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	nextEvent(t, w, 5*time.Second) // SnapshotDone
	// Writes outside the prefix wake the watch (their notifications name
	// the key, so not even that) but never reach it.
	for i := range 30 {
		mustCreate(t, st, store.Durable, fmt.Sprintf("b.%02d", i), "v")
	}
	rev := mustCreate(t, st, store.Durable, "a.1", "v")
	if ev := nextEvent(t, w, 5*time.Second); ev.Entry.Key != "a.1" || ev.Entry.Revision != rev {
		t.Errorf("got %v %q, want the put of a.1", ev.Kind, ev.Entry.Key)
	}
}

func TestWatchOutlastsASlowCatchUp(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	// One pooled connection, held by the test: the watch's catch-up waits
	// for it past its bound (LeaseTTL/2) and must try again, not break.
	const lease = 4 * time.Second
	st := newStore(t, s, Config{MaxConns: 1}, lease)
	w, err := st.Watch(opCtx(t), store.Durable, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	nextEvent(t, w, 5*time.Second) // SnapshotDone
	conn, err := st.pool.Acquire(opCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	writer := newStore(t, s, Config{Job: st.cfg.Job}, lease)
	rev := mustCreate(t, writer, store.Durable, "k", "v")
	time.Sleep(lease/2 + 500*time.Millisecond) // hold the connection past one catch-up's bound
	conn.Release()
	if ev := nextEvent(t, w, 5*time.Second); ev.Kind != store.Put || ev.Entry.Revision != rev {
		t.Fatalf("got %v %q rev %d, want the put at %d", ev.Kind, ev.Entry.Key, ev.Entry.Revision, rev)
	}
}

// TestNotificationsCarryNoKey listens on a job's channel as any role that
// can connect could: the payloads of writes, deletes and expiries carry
// the keyspace and at most the key's first segment, never the key.
func TestNotificationsCarryNoKey(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	st := newStore(t, s, Config{}, testTTL)
	mustCreate(t, st, store.Durable, "first", "v") // creates the schema
	conn, err := pgx.Connect(opCtx(t), s.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(opCtx(t), "LISTEN "+st.sc.ident); err != nil {
		t.Fatal(err)
	}
	rev := mustCreate(t, st, store.Durable, "job.split.acme-payroll", "v")
	mustCreate(t, st, store.Ephemeral, "worker.host-17", "v")
	if ok, err := st.Delete(opCtx(t), store.Durable, "job.split.acme-payroll", rev); err != nil || !ok {
		t.Fatal(ok, err)
	}
	mustCreate(t, st, store.Durable, "nodot-acme", "v")
	want := []string{"0:job.", "1:worker.", "0:job.", "0"}
	for i, w := range want {
		n, err := conn.WaitForNotification(opCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if n.Payload != w {
			t.Errorf("notification %d: payload %q, want %q", i, n.Payload, w)
		}
	}
}

// TestNotifyWakesOnlyWatchesAKeyMayConcern checks the wake-up filter on
// payloads of both forms: "<ks>:<first segment>" and, from schemas made
// before, "<ks>:<whole key>".
func TestNotifyWakesOnlyWatchesAKeyMayConcern(t *testing.T) {
	for _, c := range []struct {
		ks      store.Keyspace
		prefix  string
		payload string
		wake    bool
	}{
		{store.Durable, "job.", "0:job.", true},
		{store.Durable, "job.", "0:progress.", false},
		{store.Durable, "job.split.", "0:job.", true},
		{store.Durable, "", "0:progress.", true},
		{store.Durable, "job.", "1:job.", false},
		{store.Durable, "job.", "0", true},
		{store.Ephemeral, "worker.", "1", true},
		{store.Durable, "job.", "0:job.split.a", true},
		{store.Durable, "job.", "0:progress.a", false},
		{store.Durable, "job.", "garbage", false},
	} {
		w := &watcher{ks: c.ks, prefix: c.prefix, wake: make(chan struct{}, 1)}
		w.notify(c.payload)
		if got := len(w.wake) == 1; got != c.wake {
			t.Errorf("watch of %s under %q, payload %q: woken %v, want %v", c.ks, c.prefix, c.payload, got, c.wake)
		}
	}
}

// TestWatchEndedMidCatchUpKeepsItsConnection ends a watch (its context)
// while a catch-up is in flight: the watch ends once the catch-up returns,
// and the pool keeps the connection. A cancelled statement would cost it,
// and a cancel request to the server that closing the pool waits for.
func TestWatchEndedMidCatchUpKeepsItsConnection(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	ctx, cancel := context.WithCancel(opCtx(t))
	b := newBlockedCatchUp(t, s, ctx, testTTL)
	cancel()
	b.release()
	if err := endOf(t, b.w, 5*time.Second); err != nil {
		t.Fatalf("the watch ended with %v, want nil (its context ended)", err)
	}
	if n := b.closed.Load(); n != 0 {
		t.Fatalf("the pool closed %d connections, want 0: the watch's end aborted its catch-up", n)
	}
}

// TestWatchEndedMidHungCatchUpEndsAfterAGrace ends a watch whose catch-up
// hangs (a lock the test never releases): the catch-up is cancelled a
// grace (endGrace, a second) after the owner ended the watch, not at the
// statement bound (LeaseTTL/2, 10s here), so a departing coordinator does
// not wait on a hung server.
func TestWatchEndedMidHungCatchUpEndsAfterAGrace(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	ctx, cancel := context.WithCancel(opCtx(t))
	b := newBlockedCatchUp(t, s, ctx, 20*time.Second)
	cancel()
	if err := endOf(t, b.w, 5*time.Second); err != nil {
		t.Fatalf("the watch ended with %v, want nil (its context ended)", err)
	}
}
