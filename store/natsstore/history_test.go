package natsstore

import (
	"slices"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// TestWatchHistoryDeliversEveryKeptRevisionThenLiveWrites checks the past
// part (every revision up to the depth, deletes included, in revision
// order, only under the prefix), SnapshotDone, then live writes.
func TestWatchHistoryDeliversEveryKeptRevisionThenLiveWrites(t *testing.T) {
	srv := startServer(t)
	st := newStore(t, Config{Servers: []string{srv.ClientURL()}, Job: "h", History: 3})
	ctx := opCtx(t)
	r1 := mustCreate(t, st, store.Durable, "job.a", "1")
	mustCreate(t, st, store.Durable, "other", "x")
	r2, ok, err := st.Update(ctx, store.Durable, "job.a", []byte("2"), r1)
	if err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	r3, _, _ := st.Update(ctx, store.Durable, "job.a", []byte("3"), r2)
	r4, _, _ := st.Update(ctx, store.Durable, "job.a", []byte("4"), r3) // pushes "1" out of a depth of 3
	if ok, err := st.Delete(ctx, store.Durable, "job.a", r4); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	w, err := st.WatchHistory(ctx, store.Durable, "job.")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []string
	var last store.Revision
	for {
		ev := nextEvent(t, w, 5*time.Second)
		if ev.Kind == store.SnapshotDone {
			break
		}
		if ev.Entry.Revision <= last {
			t.Fatalf("revision %d after %d: not in revision order", ev.Entry.Revision, last)
		}
		last = ev.Entry.Revision
		got = append(got, ev.Kind.String()+":"+ev.Entry.Key+"="+string(ev.Entry.Value))
	}
	want := []string{"put:job.a=3", "put:job.a=4", "delete:job.a="}
	if !slices.Equal(got, want) {
		t.Fatalf("history = %q, want %q (depth 3, prefix job.)", got, want)
	}
	mustCreate(t, st, store.Durable, "job.b", "live")
	if ev := nextEvent(t, w, 5*time.Second); ev.Kind != store.Put || ev.Entry.Key != "job.b" || string(ev.Entry.Value) != "live" {
		t.Fatalf("live event = %+v, want put job.b=live", ev)
	}
	w.Stop()
	if _, open := <-w.Events(); open {
		t.Fatal("Events still open after Stop")
	}
	if w.Err() != nil {
		t.Fatalf("Err after Stop = %v, want nil", w.Err())
	}
}

// TestDefaultHistoryKeepsOneRevision checks that History 0 keeps only the
// latest revision, as before the knob existed.
func TestDefaultHistoryKeepsOneRevision(t *testing.T) {
	srv := startServer(t)
	st := newStore(t, Config{Servers: []string{srv.ClientURL()}, Job: "h"})
	r := mustCreate(t, st, store.Durable, "k", "1")
	if _, ok, err := st.Update(opCtx(t), store.Durable, "k", []byte("2"), r); err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	w, err := st.WatchHistory(opCtx(t), store.Durable, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := nextEvent(t, w, 5*time.Second); ev.Kind != store.Put || string(ev.Entry.Value) != "2" {
		t.Fatalf("first event = %+v, want the latest put only", ev)
	}
	if ev := nextEvent(t, w, 5*time.Second); ev.Kind != store.SnapshotDone {
		t.Fatalf("second event = %+v, want SnapshotDone", ev)
	}
}

// TestExistingOnlyNeverCreatesBuckets checks that a store with
// ExistingOnly refuses a job with no buckets, naming the bucket, and works
// once a normal store created them.
func TestExistingOnlyNeverCreatesBuckets(t *testing.T) {
	srv := startServer(t)
	ro := newStore(t, Config{Servers: []string{srv.ClientURL()}, Job: "absent", ExistingOnly: true})
	_, _, err := ro.Get(opCtx(t), store.Durable, "k")
	wantKind(t, err, coordination.Fatal, `job "absent" does not exist on this server: neither bucket coordination_absent_state nor coordination_absent_lease exists`)
	rw := newStore(t, Config{Servers: []string{srv.ClientURL()}, Job: "absent"})
	mustCreate(t, rw, store.Durable, "k", "v")
	ro2 := newStore(t, Config{Servers: []string{srv.ClientURL()}, Job: "absent", ExistingOnly: true})
	if e, ok, err := ro2.Get(opCtx(t), store.Durable, "k"); err != nil || !ok || string(e.Value) != "v" {
		t.Fatalf("Get through ExistingOnly = %+v %v %v, want v", e, ok, err)
	}
	other, err := New(Config{Servers: []string{srv.ClientURL()}, Job: "absent", ExistingOnly: true}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, _, err = other.Get(opCtx(t), store.Durable, "k")
	wantKind(t, err, coordination.Fatal, "created with TTL 2s", "give the store the job's lease duration, 2s (JobLeaseTTL reads it)")
}

// TestDeleteJobRemovesBothBuckets checks that DeleteJob removes the job's
// records and a second call (buckets gone) still succeeds.
func TestDeleteJobRemovesBothBuckets(t *testing.T) {
	srv := startServer(t)
	cfg := Config{Servers: []string{srv.ClientURL()}, Job: "gone"}
	st := newStore(t, cfg)
	mustCreate(t, st, store.Durable, "k", "v")
	mustCreate(t, st, store.Ephemeral, "e", "v")
	if err := st.DeleteJob(opCtx(t)); err != nil {
		t.Fatalf("DeleteJob: %v", err)
	}
	if err := st.DeleteJob(opCtx(t)); err != nil {
		t.Fatalf("second DeleteJob: %v", err)
	}
	cfg.ExistingOnly = true
	ro := newStore(t, cfg)
	_, _, err := ro.Get(opCtx(t), store.Durable, "k")
	wantKind(t, err, coordination.Fatal, `job "gone" does not exist on this server`)
}
