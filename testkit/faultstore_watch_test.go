package testkit

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/spate-go/coordination/store"
)

// watchFixture opens a watch of the durable keyspace through fs and drains
// its (empty) snapshot.
func watchFixture(t *testing.T, fs *FaultStore) store.Watcher {
	t.Helper()
	w, err := fs.Watch(t.Context(), store.Durable, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	if ev := <-w.Events(); ev.Kind != store.SnapshotDone {
		t.Fatalf("first event %v, want the snapshot's end", ev)
	}
	return w
}

// drain returns every event the watch has delivered once the bubble is idle.
func drain(w store.Watcher) []store.WatchEvent {
	synctest.Wait()
	var out []store.WatchEvent
	for {
		select {
		case ev := <-w.Events():
			out = append(out, ev)
		default:
			return out
		}
	}
}

// revisions returns "key@rev" for each event.
func revisions(evs []store.WatchEvent) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, fmt.Sprintf("%s@%d", ev.Entry.Key, ev.Entry.Revision))
	}
	return out
}

func TestFaultStoreSilenceWatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs, _ := newFaultStore(t)
		w := watchFixture(t, fs)
		fs.SilenceWatches()
		if _, _, err := fs.Create(t.Context(), store.Durable, "k", nil); err != nil {
			t.Fatal(err)
		}
		if got := drain(w); len(got) != 0 {
			t.Fatalf("a silenced watch delivered %v", got)
		}
		select {
		case <-w.Events():
			t.Fatal("a silenced watch ended")
		default:
		}
		fresh := snapshotOf(t, fs)
		if got := revisions(fresh); !slices.Equal(got, []string{"k@1"}) {
			t.Fatalf("a watch opened afterwards delivered %v, want its snapshot k@1", got)
		}
	})
}

// snapshotOf opens a new durable watch through fs and returns the puts of
// its snapshot.
func snapshotOf(t *testing.T, fs *FaultStore) []store.WatchEvent {
	t.Helper()
	w, err := fs.Watch(t.Context(), store.Durable, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var out []store.WatchEvent
	for ev := range w.Events() {
		if ev.Kind == store.SnapshotDone {
			return out
		}
		out = append(out, ev)
	}
	return out
}

func TestFaultStoreDuplicateAndStaleWatchEvents(t *testing.T) {
	for _, tc := range []struct {
		name string
		arm  func(*FaultStore)
		want []string
	}{
		{"duplicated", (*FaultStore).DuplicateWatchEvents, []string{"k@1", "k@1", "k@2", "k@2"}},
		{"stale", (*FaultStore).StaleWatchEvents, []string{"k@1", "k@2", "k@1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs, _ := newFaultStore(t)
				w := watchFixture(t, fs)
				tc.arm(fs)
				rev, _, err := fs.Create(t.Context(), store.Durable, "k", []byte("v1"))
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := fs.Update(t.Context(), store.Durable, "k", []byte("v2"), rev); err != nil {
					t.Fatal(err)
				}
				if got := revisions(drain(w)); !slices.Equal(got, tc.want) {
					t.Fatalf("delivered %v, want %v", got, tc.want)
				}
				fs.Disarm()
				if _, err := fs.Delete(t.Context(), store.Durable, "k", 0); err != nil {
					t.Fatal(err)
				}
				if got := revisions(drain(w)); !slices.Equal(got, []string{"k@3"}) {
					t.Fatalf("after Disarm: %v, want k@3 once", got)
				}
			})
		})
	}
}
