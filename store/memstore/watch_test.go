package memstore

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

func TestWatchPrefix(t *testing.T) {
	keys := []string{"split.a", "spec.b", "sp", "s", "split.ab", "other"}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"", []string{"other", "s", "sp", "spec.b", "split.a", "split.ab"}},
		{"sp", []string{"sp", "spec.b", "split.a", "split.ab"}},
		{"split.a", []string{"split.a", "split.ab"}},
		{"spl", []string{"split.a", "split.ab"}},
		{"split.", []string{"split.a", "split.ab"}},
		{"zzz", nil},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q", tc.prefix), func(t *testing.T) {
			st, _ := newMock(t)
			for _, k := range keys[:3] {
				mustCreate(t, st, store.Durable, k, "v")
			}
			w, snap := mustWatch(t, st, store.Durable, tc.prefix)
			for _, k := range keys[3:] {
				mustCreate(t, st, store.Durable, k, "v")
			}
			evs, _ := pending(w)
			var got []string
			for _, e := range snap {
				got = append(got, e.Key)
			}
			for _, ev := range evs {
				got = append(got, ev.Entry.Key)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("keys %q; want %q", got, tc.want)
			}
		})
	}
}

func TestWatchLag(t *testing.T) {
	const reason = "watch lagged by more than 4096 events; re-watch"
	tests := []struct {
		name     string
		snapshot int  // keys written before the watch
		readSnap bool // consume the snapshot before the tail
		tail     int  // live events written without reading
		broken   bool
	}{
		{"4096 behind is kept", 0, true, 4096, false},
		{"4097 behind is broken", 0, true, 4097, true},
		{"unread SnapshotDone does not count", 0, false, 4096, false},
		{"unread snapshot does not count", 5000, false, 4096, false},
		{"unread snapshot plus 4097 behind is broken", 5000, false, 4097, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st, _ := newMock(t)
			for i := range tc.snapshot {
				mustCreate(t, st, store.Durable, fmt.Sprintf("s%d", i), "v")
			}
			w, err := st.Watch(ctx, store.Durable, "")
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			if tc.readSnap {
				for range tc.snapshot + 1 {
					<-w.Events()
				}
			}
			for i := range tc.tail {
				mustCreate(t, st, store.Durable, fmt.Sprintf("t%d", i), "v")
			}
			evs, closed := pending(w)
			want := tc.tail
			if !tc.readSnap {
				want += tc.snapshot + 1
			}
			if tc.broken {
				want--
			}
			if len(evs) != want || closed != tc.broken {
				t.Fatalf("read %d events, closed %v; want %d, closed %v", len(evs), closed, want, tc.broken)
			}
			if !tc.broken {
				if w.Err() != nil {
					t.Fatalf("Err of a running watch = %v", w.Err())
				}
				mustCreate(t, st, store.Durable, "after", "v")
				if evs, closed := pending(w); len(evs) != 1 || closed {
					t.Fatalf("after draining, %d events, closed %v; want the watch alive", len(evs), closed)
				}
				return
			}
			wantErr(t, w.Err(), coordination.Retryable, reason)
		})
	}
}

func TestWatchEnds(t *testing.T) {
	tests := []struct {
		name string
		end  func(st *Store, w store.Watcher, cancel context.CancelFunc)
	}{
		{"stop", func(_ *Store, w store.Watcher, _ context.CancelFunc) { w.Stop(); w.Stop() }},
		{"context", func(_ *Store, _ store.Watcher, cancel context.CancelFunc) { cancel() }},
		{"close", func(st *Store, _ store.Watcher, _ context.CancelFunc) { st.Close() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := newMock(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w, err := st.Watch(ctx, store.Durable, "")
			if err != nil {
				t.Fatal(err)
			}
			mustCreate(t, st, store.Durable, "k", "v")
			tc.end(st, w, cancel)
			var kinds []store.EventKind
			for ev := range w.Events() { // must be closed
				kinds = append(kinds, ev.Kind)
			}
			if w.Err() != nil {
				t.Fatalf("Err = %v; want nil", w.Err())
			}
			if tc.name == "stop" && !slices.Equal(kinds, []store.EventKind{store.SnapshotDone, store.Put}) {
				t.Fatalf("after Stop read %v; want the buffered events", kinds)
			}
			if tc.name != "close" {
				mustCreate(t, st, store.Durable, "k2", "v") // no send on the closed channel
			}
		})
	}
}
