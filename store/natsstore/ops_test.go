package natsstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

func TestOperationMapping(t *testing.T) {
	st := storeFor(t, startServer(t))
	ctx := opCtx(t)
	for _, ks := range []store.Keyspace{store.Durable, store.Ephemeral} {
		t.Run(ks.String(), func(t *testing.T) {
			r1 := mustCreate(t, st, ks, "a.b", "v1")
			if r1 == 0 {
				t.Fatal("revision 0")
			}
			if _, ok, err := st.Create(ctx, ks, "a.b", []byte("again")); ok || err != nil {
				t.Fatalf("create over a live key: ok=%v err=%v", ok, err)
			}
			if _, ok, err := st.Update(ctx, ks, "a.b", []byte("x"), r1+100); ok || err != nil {
				t.Fatalf("stale update: ok=%v err=%v", ok, err)
			}
			if _, ok, err := st.Update(ctx, ks, "a.b", []byte("x"), 0); ok || err != nil {
				t.Fatalf("update at revision 0: ok=%v err=%v", ok, err)
			}
			if _, ok, err := st.Update(ctx, ks, "nope", []byte("x"), 0); ok || err != nil {
				t.Fatalf("update of an absent key at revision 0 must not create it: ok=%v err=%v", ok, err)
			}
			if _, ok, _ := st.Get(ctx, ks, "nope"); ok {
				t.Fatal("update at revision 0 created the key")
			}
			r2, ok, err := st.Update(ctx, ks, "a.b", []byte("v2"), r1)
			if !ok || err != nil || r2 <= r1 {
				t.Fatalf("update: rev=%d ok=%v err=%v", r2, ok, err)
			}
			e, ok, err := st.Get(ctx, ks, "a.b")
			if !ok || err != nil || string(e.Value) != "v2" || e.Revision != r2 || e.Key != "a.b" {
				t.Fatalf("get: %+v ok=%v err=%v", e, ok, err)
			}
			if ok, err := st.Delete(ctx, ks, "a.b", r1); ok || err != nil {
				t.Fatalf("delete at a stale revision: ok=%v err=%v", ok, err)
			}
			if ok, err := st.Delete(ctx, ks, "a.b", r2); !ok || err != nil {
				t.Fatalf("guarded delete: ok=%v err=%v", ok, err)
			}
			if _, ok, _ := st.Get(ctx, ks, "a.b"); ok {
				t.Fatal("get after delete found the key")
			}
			if _, ok, _ := st.Update(ctx, ks, "a.b", []byte("x"), r2); ok {
				t.Fatal("update of a deleted key won")
			}
			for _, guard := range []store.Revision{0, r2, 12345} {
				if ok, err := st.Delete(ctx, ks, "a.b", guard); !ok || err != nil {
					t.Fatalf("delete of an absent key (guard %d): ok=%v err=%v", guard, ok, err)
				}
				if ok, err := st.Delete(ctx, ks, "never.written", guard); !ok || err != nil {
					t.Fatalf("delete of a never written key (guard %d): ok=%v err=%v", guard, ok, err)
				}
			}
			r3 := mustCreate(t, st, ks, "a.b", "")
			if r3 <= r2 {
				t.Fatalf("re-create revision %d not above %d", r3, r2)
			}
			e, ok, _ = st.Get(ctx, ks, "a.b")
			if !ok || e.Value == nil || len(e.Value) != 0 {
				t.Fatalf("empty value did not round-trip: %#v", e.Value)
			}
		})
	}
}

func TestValueCap(t *testing.T) {
	st := storeFor(t, startServer(t))
	ctx := opCtx(t)
	big := bytes.Repeat([]byte{'x'}, 524288)
	if _, ok, err := st.Create(ctx, store.Durable, "big", big); !ok || err != nil {
		t.Fatalf("create at the cap: ok=%v err=%v", ok, err)
	}
	over := append(big, 'y')
	_, _, err := st.Create(ctx, store.Durable, "over", over)
	wantKind(t, err, coordination.Fatal)
	if want := "value for over is 524289 bytes, above this store's cap of 524288 bytes"; !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("err %q, want suffix %q", err, want)
	}
	e, _, _ := st.Get(ctx, store.Durable, "big")
	_, _, err = st.Update(ctx, store.Durable, "big", over, e.Revision)
	wantKind(t, err, coordination.Fatal, "value for big is 524289 bytes")
	if _, ok, _ := st.Get(ctx, store.Durable, "over"); ok {
		t.Fatal("oversized value was written")
	}
}

func TestInvalidKeyIsFatal(t *testing.T) {
	st := storeFor(t, startServer(t))
	_, _, err := st.Create(opCtx(t), store.Durable, "has space", []byte("v"))
	wantKind(t, err, coordination.Fatal, `"has space"`)
}

func TestCancelledContextIsRetryable(t *testing.T) {
	st := storeFor(t, startServer(t))
	mustCreate(t, st, store.Durable, "k", "v") // connected
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err := st.Get(ctx, store.Durable, "k")
	wantKind(t, err, coordination.Retryable)
	if !isCtxErr(err) {
		t.Fatalf("cause lost: %v", err)
	}
}

func TestExpiryAndRenewal(t *testing.T) {
	t.Parallel() // waits in real time
	st := storeFor(t, startServer(t))
	ctx := opCtx(t)
	w, err := st.Watch(t.Context(), store.Ephemeral, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := nextEvent(t, w, 5*time.Second); ev.Kind != store.SnapshotDone {
		t.Fatalf("first event %v, want snapshot-done", ev.Kind)
	}
	rev := mustCreate(t, st, store.Ephemeral, "lease.1", "x")
	start := time.Now()
	// Renew every lease/3 for a full 2 leases: the key stays live. The
	// server stamps the last write between sent and acked.
	var sent, acked time.Time
	for time.Since(start) < 2*testLease {
		time.Sleep(testLease / 3)
		sent = time.Now()
		r, ok, err := st.Update(ctx, store.Ephemeral, "lease.1", []byte("x"), rev)
		if !ok || err != nil {
			t.Fatalf("renewal after %s: ok=%v err=%v", time.Since(start), ok, err)
		}
		acked = time.Now()
		rev = r
	}
	var del store.WatchEvent
	for {
		ev := nextEvent(t, w, 3*testLease)
		if ev.Kind == store.Delete {
			del = ev
			break
		}
	}
	sinceSent, sinceAcked := time.Since(sent), time.Since(acked)
	t.Logf("expired %s after the last write was sent, %s after its ack (lease %s)", sinceSent, sinceAcked, testLease)
	if del.Entry.Key != "lease.1" || del.Entry.Revision <= rev {
		t.Fatalf("expiry event %+v, want key lease.1 above revision %d", del, rev)
	}
	if sinceSent < testLease-100*time.Millisecond || sinceAcked > testLease+1500*time.Millisecond {
		t.Fatalf("expired %s after the last write was sent, %s after its ack; lease %s", sinceSent, sinceAcked, testLease)
	}
	if _, ok, _ := st.Get(ctx, store.Ephemeral, "lease.1"); ok {
		t.Fatal("expired key still readable")
	}
	if _, ok, _ := st.Update(ctx, store.Ephemeral, "lease.1", []byte("y"), rev); ok {
		t.Fatal("update of an expired key won")
	}
	if r := mustCreate(t, st, store.Ephemeral, "lease.1", "z"); r <= del.Entry.Revision {
		t.Fatalf("re-create revision %d not above the expiry's %d", r, del.Entry.Revision)
	}
}

func TestRevisionMismatchCodes(t *testing.T) {
	tests := []struct {
		name               string
		err                error
		mismatch, inFlight bool
	}{
		{"sentinel", jetstream.ErrKeyRevisionMismatch, true, false},
		{"10071", &jetstream.APIError{ErrorCode: 10071, Code: 400}, true, false},
		{"10164", &jetstream.APIError{ErrorCode: 10164, Code: 400}, true, true},
		{"wrapped 10164", errors.Join(errors.New("x"), &jetstream.APIError{ErrorCode: 10164}), true, true},
		{"10164 wrapped with ErrKeyExists", fmt.Errorf("%w: %w", &jetstream.APIError{ErrorCode: 10164}, jetstream.ErrKeyExists), true, true},
		{"other code", &jetstream.APIError{ErrorCode: 10059}, false, false},
		{"plain", errors.New("nats: timeout"), false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := isRevisionMismatch(tc.err); got != tc.mismatch {
				t.Fatalf("isRevisionMismatch = %v, want %v", got, tc.mismatch)
			}
			if got := isInFlight(tc.err); got != tc.inFlight {
				t.Fatalf("isInFlight = %v, want %v", got, tc.inFlight)
			}
		})
	}
}

func TestUpdateNeverResurrectsADeletedKey(t *testing.T) {
	srv := startServer(t)
	st := storeFor(t, srv)
	other := storeFor(t, srv) // knows none of st's revisions
	ctx := opCtx(t)
	for _, ks := range []store.Keyspace{store.Durable, store.Ephemeral} {
		t.Run(ks.String(), func(t *testing.T) {
			w, err := st.Watch(t.Context(), ks, "r.")
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			nextEvent(t, w, 5*time.Second) // SnapshotDone
			rev := mustCreate(t, st, ks, "r.k", "v")
			if ok, err := st.Delete(ctx, ks, "r.k", rev); !ok || err != nil {
				t.Fatal(ok, err)
			}
			// With one message per key, the put may be replaced by the delete
			// marker before the watcher reads it: skip it if it comes.
			del := nextEvent(t, w, 5*time.Second)
			if del.Kind == store.Put {
				del = nextEvent(t, w, 5*time.Second)
			}
			if del.Kind != store.Delete {
				t.Fatalf("event %+v, want the delete", del)
			}
			for name, s := range map[string]*Store{"watcher": st, "other": other} {
				if _, ok, err := s.Update(ctx, ks, "r.k", []byte("zombie"), del.Entry.Revision); ok || err != nil {
					t.Fatalf("%s: update at the delete marker's revision: ok=%v err=%v", name, ok, err)
				}
			}
			if _, ok, _ := st.Get(ctx, ks, "r.k"); ok {
				t.Fatal("the deleted key came back")
			}
			// A revision learned elsewhere still works (read first).
			rev = mustCreate(t, st, ks, "r.k", "v")
			if _, ok, err := other.Update(ctx, ks, "r.k", []byte("v2"), rev); !ok || err != nil {
				t.Fatalf("update at a revision another store wrote: ok=%v err=%v", ok, err)
			}
		})
	}
}
