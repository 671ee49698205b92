package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/spate-go/coordination/store"
)

// testWatchNoGapWrittenOnce creates new keys, each written exactly once,
// while a watch starts. No key is ever rewritten, so no later write can hide
// a lost one: every key, created before, during or after the call to Watch,
// is live for the rest of the check and must be delivered at its revision,
// in the snapshot or in the tail.
func testWatchNoGapWrittenOnce(t *testing.T, newStore newStoreFunc) {
	const before, after = 30, 200 // keys created before Watch is called; after it returned
	st, _ := fresh(t, newStore)
	var (
		watching atomic.Bool
		mu       sync.Mutex
		revs     = map[string]store.Revision{} // guarded by mu
		wg       sync.WaitGroup
		started  = make(chan struct{}) // closed after the first writes
		errs     = make(chan error, 1)
	)
	wg.Go(func() {
		late := 0
		for i := 0; late < after; i++ {
			if watching.Load() {
				late++
			}
			key := fmt.Sprintf("once.%05d", i)
			ctx, cancel := opCtx(st)
			rev, ok, err := st.Create(ctx, store.Durable, key, fmt.Appendf(nil, "%d", i))
			cancel()
			if err != nil || !ok {
				errs <- fmt.Errorf("Create(%q): won=%v err=%v; a new key must be created", key, ok, err)
				return
			}
			mu.Lock()
			revs[key] = rev
			mu.Unlock()
			if i == before {
				close(started)
			}
		}
	})
	select {
	case <-started:
	case err := <-errs:
		t.Fatal(err)
	}
	s, stop := openStream(t, st, store.Durable, "once.")
	defer stop()
	watching.Store(true)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	want := map[string]final{}
	for k, rev := range revs {
		want[k] = final{rev: rev}
	}
	s.awaitFinal(want, nil)
	for k, rev := range revs {
		if got := s.last[k]; got != rev {
			t.Fatalf("%q was created once, at revision %d, but the watch delivered revision %d", k, rev, got)
		}
	}
}
