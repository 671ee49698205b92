package pgstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
)

func TestConcurrentSweepersTurnEachExpiryIntoOneDelete(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	job := pgtest.UniqueName("sweep")
	const handles, keys = 4, 50
	var sts []*Store
	for range handles {
		sts = append(sts, newStore(t, s, Config{Job: job}, testTTL))
	}
	w, err := sts[0].Watch(opCtx(t), store.Ephemeral, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := nextEvent(t, w, 5*time.Second); ev.Kind != store.SnapshotDone {
		t.Fatalf("first event %v, want SnapshotDone", ev.Kind)
	}
	written := map[string]time.Time{}
	last := map[string]store.Revision{}
	for i := range keys {
		key := fmt.Sprintf("k%02d", i)
		written[key] = time.Now()
		last[key] = mustCreate(t, sts[i%handles], store.Ephemeral, key, "v")
	}
	deleted := map[string]bool{}
	for len(deleted) < keys {
		ev := nextEvent(t, w, 5*time.Second)
		switch ev.Kind {
		case store.Put:
			continue
		case store.Delete:
		default:
			t.Fatalf("unexpected %v", ev.Kind)
		}
		key := ev.Entry.Key
		if deleted[key] {
			t.Errorf("%s deleted twice", key)
		}
		deleted[key] = true
		if ev.Entry.Revision <= last[key] {
			t.Errorf("%s: delete at rev %d, not above its write's %d", key, ev.Entry.Revision, last[key])
		}
		// ExpiryPrecision is 0: never before the TTL; the sweep's
		// cadence bounds how late.
		if age := time.Since(written[key]); age < testTTL || age > testTTL+sts[0].sweepInterval()+time.Second {
			t.Errorf("%s: expiry event %s after its write, want within [%s, %s]", key, age, testTTL, testTTL+sts[0].sweepInterval()+time.Second)
		}
	}
	if n := count(t, sts[0], "SELECT count(*) FROM {s}.changes WHERE keyspace = 1 AND value IS NULL"); n != keys {
		t.Errorf("%d delete rows in the change log, want %d (one per expiry)", n, keys)
	}
	if n := count(t, sts[0], "SELECT count(*) FROM {s}.entries"); n != 0 {
		t.Errorf("%d entries left after the sweep", n)
	}
}

func TestSweepPassIsBounded(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	// ExistingOnly after creation: no sweeper runs on this handle, so the
	// test drives the passes itself.
	job := pgtest.UniqueName("bound")
	st := newStore(t, s, Config{Job: job}, testTTL)
	mustCreate(t, st, store.Durable, "d", "v")
	_ = st.Close()
	st = newStore(t, s, Config{Job: job, ExistingOnly: true}, testTTL)
	for i := range 25 {
		mustCreate(t, st, store.Ephemeral, fmt.Sprintf("e%02d", i), "v")
	}
	waitFor(t, 5*time.Second, "every key expired", func() bool {
		l, err := st.List(opCtx(t), store.Ephemeral, "")
		return err == nil && len(l) == 0
	})
	for pass, want := range []int64{10, 10, 5, 0} {
		if n := count(t, st, "SELECT {s}.sweep_expired(10)"); n != want {
			t.Errorf("pass %d removed %d, want %d", pass, n, want)
		}
	}
}

func TestChangeLogIsPrunedByAge(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	st := newStore(t, s, Config{Retention: time.Millisecond}, testTTL)
	for i := range 20 {
		mustCreate(t, st, store.Durable, fmt.Sprintf("k%02d", i), "v")
	}
	waitFor(t, 10*time.Second, "the change log pruned", func() bool {
		return count(t, st, "SELECT count(*) FROM {s}.changes") == 0
	})
	if n := count(t, st, "SELECT pruned_upto FROM {s}.meta"); n < 20 {
		t.Errorf("pruned_upto %d after pruning 20 changes", n)
	}
	// The entries stay: only the log is pruned.
	if l, err := st.List(opCtx(t), store.Durable, ""); err != nil || len(l) != 20 {
		t.Errorf("List = %d entries, %v; want 20", len(l), err)
	}
}
