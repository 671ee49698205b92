package natsstore

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

func TestServerRestartMidWatch(t *testing.T) {
	t.Parallel() // waits in real time
	opts := serverOptions(t.TempDir())
	opts.SyncAlways = true // acknowledged writes are on disk
	srv := runServer(t, opts)
	opts.Port = srv.Addr().(*net.TCPAddr).Port
	st := storeFor(t, srv)
	for i := range 10 {
		mustCreate(t, st, store.Durable, fmt.Sprintf("pre.%d", i), "v")
	}
	w, err := st.Watch(t.Context(), store.Durable, "")
	if err != nil {
		t.Fatal(err)
	}
	if keys := snapshot(t, w); len(keys) != 10 {
		t.Fatalf("snapshot %v", keys)
	}

	// A writer creates keys through the restart and remembers every
	// acknowledged one.
	var (
		mu    sync.Mutex
		acked = map[string]store.Revision{}
		after int // acknowledged after the restart
	)
	restarted := make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			key := fmt.Sprintf("w.%d", i)
			// A write in flight when the server stops waits for its ack
			// until its deadline; keep that short.
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			rev, ok, err := st.Create(ctx, store.Durable, key, []byte(key))
			cancel()
			if err != nil {
				if coordination.KindOf(err) != coordination.Retryable {
					t.Errorf("create %s: %v", key, err)
					return
				}
				time.Sleep(20 * time.Millisecond)
				continue
			}
			if !ok {
				t.Errorf("create %s lost: the key is new", key)
				return
			}
			mu.Lock()
			acked[key] = rev
			select {
			case <-restarted:
				after++
			default:
			}
			mu.Unlock()
		}
	})
	waitFor(t, 10*time.Second, "writes before the restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 20
	})

	srv.Shutdown()
	srv.WaitForShutdown()
	for range w.Events() {
	}
	wantKind(t, w.Err(), coordination.Retryable, "connection to NATS lost", "re-watch")

	runServer(t, opts) // same port, same store directory
	close(restarted)
	waitFor(t, 30*time.Second, "writes after the restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return after >= 20
	})
	close(stop)
	wg.Wait()

	// A new watch works and its snapshot holds every acknowledged write.
	var w2 store.Watcher
	eventually(t, 10*time.Second, "re-watch", func() error {
		var err error
		w2, err = st.Watch(t.Context(), store.Durable, "")
		return err
	})
	defer w2.Stop()
	seen := map[string]store.Revision{}
	for {
		ev := nextEvent(t, w2, 10*time.Second)
		if ev.Kind == store.SnapshotDone {
			break
		}
		seen[ev.Entry.Key] = ev.Entry.Revision
	}
	mu.Lock()
	defer mu.Unlock()
	for key, rev := range acked {
		if seen[key] != rev {
			t.Errorf("acknowledged write %s at revision %d: snapshot has revision %d", key, rev, seen[key])
		}
	}
	for i := range 10 {
		if _, ok := seen[fmt.Sprintf("pre.%d", i)]; !ok {
			t.Errorf("pre.%d lost", i)
		}
	}
	t.Logf("%d acknowledged writes, %d after the restart, all present", len(acked), after)
	// The tail works on the new watch.
	rev := mustCreate(t, st, store.Durable, "post", "v")
	if ev := nextEvent(t, w2, 5*time.Second); ev.Kind != store.Put || ev.Entry.Key != "post" || ev.Entry.Revision != rev {
		t.Fatalf("tail event %+v", ev)
	}
}
