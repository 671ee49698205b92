package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// lagWrites is how many writes testWatchLag makes while its consumer reads
// nothing: thousands, far more than a careless buffer holds.
const lagWrites = 3000

// testWatchLag leaves a watch unread while thousands of new keys are
// created, then reads it: every key must be delivered, or the watch must
// break with Retryable. Silently dropping events is the one forbidden
// outcome (docs: a backend that cannot keep up breaks the watch).
func testWatchLag(t *testing.T, newStore newStoreFunc) {
	const writers = 4
	st, _ := fresh(t, newStore)
	s, stop := openStream(t, st, store.Durable, "lag.")
	defer stop()
	s.snapshot()
	revs := make([]store.Revision, lagWrites)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := w; i < lagWrites; i += writers {
				key := fmt.Sprintf("lag.%05d", i)
				ctx, cancel := opCtx(st)
				rev, ok, err := st.Create(ctx, store.Durable, key, nil)
				cancel()
				if err != nil || !ok {
					errs[w] = fmt.Errorf("Create(%q): won=%v err=%v; a new key must be created", key, ok, err)
					return
				}
				revs[i] = rev
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for got < lagWrites {
		ev, ok := s.nextOrQuiet()
		switch {
		case !ok && s.closed:
			if coordination.KindOf(s.w.Err()) != coordination.Retryable {
				t.Fatalf("the watch ended after %d of %d events with Err %v; a lagging watch must deliver every event or break with Retryable", got, lagWrites, s.w.Err())
			}
			t.Logf("the watch broke after %d of %d events: %v", got, lagWrites, s.w.Err())
			return
		case !ok:
			t.Fatalf("the watch delivered %d of %d keys created while its consumer read nothing, then nothing for %v without breaking; a store must never drop events silently (break the watch with Retryable instead)", got, lagWrites, eventTimeout)
		case ev.Kind == store.Put && !s.dup:
			var i int
			if _, err := fmt.Sscanf(ev.Entry.Key, "lag.%05d", &i); err != nil || i >= lagWrites || revs[i] != ev.Entry.Revision {
				t.Fatalf("the watch delivered %q at revision %d, which no write made", ev.Entry.Key, ev.Entry.Revision)
			}
			got++
		}
	}
}

// nextOrQuiet is next that returns ok=false instead of failing when no event
// arrives within eventTimeout (s.closed tells the two apart).
func (s *stream) nextOrQuiet() (store.WatchEvent, bool) {
	s.t.Helper()
	timer := time.NewTimer(s.wait())
	defer timer.Stop()
	select {
	case ev, ok := <-s.w.Events():
		if !ok {
			s.closed = true
			return ev, false
		}
		s.check(ev)
		return ev, true
	case <-timer.C:
		return store.WatchEvent{}, false
	}
}
