package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// TestCountingForwardsValueLimiter checks the decorator reports the wrapped
// store's cap, so the coordinator's size checks see it.
func TestCountingForwardsValueLimiter(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   store.Store
		want int
	}{
		{"capped", memstore.New(time.Second, memstore.WithMaxValueSize(123)), 123},
		{"uncapped", memstore.New(time.Second), 0},
		{"no limiter", noLimiter{memstore.New(time.Second, memstore.WithMaxValueSize(5))}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st store.Store = newCounting(tc.st)
			l, ok := st.(store.ValueLimiter)
			if !ok {
				t.Fatal("countingStore does not implement store.ValueLimiter")
			}
			if got := l.MaxValueSize(); got != tc.want {
				t.Fatalf("MaxValueSize() = %d, want %d", got, tc.want)
			}
		})
	}
}

// noLimiter hides a store's optional interfaces.
type noLimiter struct{ store.Store }

// TestCountingCountsAndTaps checks every call is counted per keyspace and
// operation, every write reaches the tap with its outcome, and watch events
// are counted as the consumer receives them.
func TestCountingCountsAndTaps(t *testing.T) {
	ctx := context.Background()
	cs := newCounting(memstore.New(time.Minute))
	var mu sync.Mutex
	var taps []write
	cs.setTap(func(w write) { mu.Lock(); taps = append(taps, w); mu.Unlock() })

	w, err := cs.Watch(ctx, store.Durable, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	expectEvent(t, w, store.SnapshotDone)
	rev, ok, err := cs.Create(ctx, store.Durable, "k1", []byte("abc"))
	if err != nil || !ok {
		t.Fatalf("Create = %v, %v", ok, err)
	}
	if _, ok, _ := cs.Create(ctx, store.Durable, "k1", []byte("x")); ok {
		t.Fatal("second Create won")
	}
	if _, ok, err := cs.Update(ctx, store.Durable, "k1", []byte("abcd"), rev); err != nil || !ok {
		t.Fatalf("Update = %v, %v", ok, err)
	}
	if _, _, err := cs.Create(ctx, store.Ephemeral, "e1", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cs.Get(ctx, store.Durable, "k1"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.List(ctx, store.Ephemeral, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Delete(ctx, store.Durable, "k1", 0); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w, store.Put)
	expectEvent(t, w, store.Put)
	expectEvent(t, w, store.Delete)

	got := cs.snapshot()
	want := tally{events: 4}
	want.calls[store.Durable][opWatch] = 1
	want.calls[store.Durable][opCreate] = 2
	want.calls[store.Durable][opUpdate] = 1
	want.calls[store.Durable][opGet] = 1
	want.calls[store.Durable][opDelete] = 1
	want.calls[store.Ephemeral][opCreate] = 1
	want.calls[store.Ephemeral][opList] = 1
	if got != want {
		t.Fatalf("tally = %+v, want %+v", got, want)
	}
	if got.writes() != 5 {
		t.Fatalf("writes() = %d, want 5", got.writes())
	}
	if cs.watches.Load() != 1 || cs.live.Load() != 1 || cs.loaded.Load() != 1 {
		t.Fatalf("watches %d live %d loaded %d, want 1, 1 and 1", cs.watches.Load(), cs.live.Load(), cs.loaded.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	wantTaps := []struct {
		ks   store.Keyspace
		op   op
		size int
		ok   bool
	}{
		{store.Durable, opCreate, 3, true},
		{store.Durable, opCreate, 1, false},
		{store.Durable, opUpdate, 4, true},
		{store.Ephemeral, opCreate, 0, true},
		{store.Durable, opDelete, 0, true},
	}
	if len(taps) != len(wantTaps) {
		t.Fatalf("tap saw %d writes, want %d", len(taps), len(wantTaps))
	}
	for i, wt := range wantTaps {
		g := taps[i]
		if g.ks != wt.ks || g.op != wt.op || g.size != wt.size || g.ok != wt.ok || g.end.Before(g.start) {
			t.Errorf("tap %d = %+v, want %+v", i, g, wt)
		}
	}
}

// TestCountingWatcherStop checks Stop closes Events, Err is then nil, and
// the watch no longer counts as live or loaded.
func TestCountingWatcherStop(t *testing.T) {
	ctx := context.Background()
	cs := newCounting(memstore.New(time.Minute))
	if _, _, err := cs.Create(ctx, store.Durable, "a", nil); err != nil {
		t.Fatal(err)
	}
	w, err := cs.Watch(ctx, store.Durable, "")
	if err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w, store.Put)
	expectEvent(t, w, store.SnapshotDone)
	if cs.live.Load() != 1 || cs.loaded.Load() != 1 {
		t.Fatalf("before Stop: live %d loaded %d, want 1 and 1", cs.live.Load(), cs.loaded.Load())
	}
	w.Stop()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, open := <-w.Events():
			if !open {
				if err := w.Err(); err != nil {
					t.Fatalf("Err() = %v after Stop, want nil", err)
				}
				if cs.live.Load() != 0 || cs.loaded.Load() != 0 {
					t.Fatalf("after Stop: live %d loaded %d, want 0 and 0", cs.live.Load(), cs.loaded.Load())
				}
				return
			}
		case <-deadline:
			t.Fatal("Events not closed 10s after Stop")
		}
	}
}

// expectEvent receives one event of kind k within 10s.
func expectEvent(t *testing.T, w store.Watcher, k store.EventKind) {
	t.Helper()
	select {
	case ev, ok := <-w.Events():
		if !ok || ev.Kind != k {
			t.Fatalf("event = %+v (open %v), want kind %d", ev, ok, k)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no event of kind %d within 10s", k)
	}
}
