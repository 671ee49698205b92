package memstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// A lease on a mock clock: created, watched, and expired by advancing the
// clock, which reaches the watcher as a Delete with a higher revision.
func ExampleNew() {
	ctx := context.Background()
	clk := clock.NewMock()
	st := memstore.New(30*time.Second, memstore.WithClock(clk))
	defer st.Close()

	rev, ok, _ := st.Create(ctx, store.Ephemeral, "lease.s1", []byte("worker-1"))
	fmt.Println("create:", rev, ok)
	_, ok, _ = st.Create(ctx, store.Ephemeral, "lease.s1", []byte("worker-2"))
	fmt.Println("second create:", ok)

	w, _ := st.Watch(ctx, store.Ephemeral, "lease.")
	defer w.Stop()
	for ev := range w.Events() {
		if ev.Kind == store.SnapshotDone {
			fmt.Println(ev.Kind)
			break
		}
		fmt.Println(ev.Kind, ev.Entry.Key, string(ev.Entry.Value), ev.Entry.Revision)
	}

	clk.Add(30 * time.Second) // the lease's TTL passes without a renewal
	ev := <-w.Events()
	fmt.Println(ev.Kind, ev.Entry.Key, ev.Entry.Revision)
	_, ok, _ = st.Get(ctx, store.Ephemeral, "lease.s1")
	fmt.Println("live after the TTL:", ok)
	// Output:
	// create: 1 true
	// second create: false
	// put lease.s1 worker-1 1
	// snapshot-done
	// delete lease.s1 2
	// live after the TTL: false
}
