package testkit

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// Store rollback (docs/protocol.md, "Store rollback"): a member whose store
// is replaced by an older copy of itself, as a NATS server restarted from
// an older store directory, fails with a Fatal naming the key and both
// revisions, never blaming the source.

// storeCopy is the content of both keyspaces of a store at one moment.
type storeCopy [2][]store.Entry

// copyStore lists every key of both keyspaces of st.
func copyStore(t *testing.T, st store.Store) storeCopy {
	t.Helper()
	var c storeCopy
	for _, ks := range []store.Keyspace{store.Durable, store.Ephemeral} {
		es, err := st.List(t.Context(), ks, "")
		if err != nil {
			t.Fatalf("list %s: %v", ks, err)
		}
		c[ks] = es
	}
	return c
}

// restore returns a new memstore on f's clock holding c, every key at its
// own revision: writes of a filler key, deleted at the end, use up the
// revisions in between (revisions of a memstore keyspace are one counter).
func (c storeCopy) restore(t *testing.T, f *Fleet) *memstore.Store {
	t.Helper()
	st := memstore.New(f.Config().LeaseDuration, memstore.WithClock(f.Clock()))
	t.Cleanup(func() { _ = st.Close() })
	ctx := t.Context()
	const filler = "testkit-filler"
	for _, ks := range []store.Keyspace{store.Durable, store.Ephemeral} {
		es := slices.Clone(c[ks])
		slices.SortFunc(es, func(a, b store.Entry) int { return int(a.Revision) - int(b.Revision) })
		var last, fill store.Revision
		for _, e := range es {
			for last+1 < e.Revision {
				var err error
				if fill == 0 {
					last, _, err = st.Create(ctx, ks, filler, []byte("x"))
				} else {
					last, _, err = st.Update(ctx, ks, filler, []byte("x"), fill)
				}
				if err != nil {
					t.Fatalf("filler: %v", err)
				}
				fill = last
			}
			rev, ok, err := st.Create(ctx, ks, e.Key, e.Value)
			if err != nil || !ok || rev != e.Revision {
				t.Fatalf("restore %s %s: rev %d ok %v err %v, want rev %d", ks, e.Key, rev, ok, err, e.Revision)
			}
			last = rev
		}
		if fill != 0 {
			if _, err := st.Delete(ctx, ks, filler, 0); err != nil {
				t.Fatalf("filler: %v", err)
			}
		}
	}
	return st
}

var rollbackReason = regexp.MustCompile(`store rollback: (durable|ephemeral) key (\S+) is at revision (\d+), below revision (\d+) this worker already saw; the store lost acknowledged writes .*set sync_interval: always on every NATS server, or restore the job from scratch`)

// wantRollback fails unless err is the rollback Fatal, naming a key (wantKey
// if not "") at a revision below the one the worker saw.
func wantRollback(t *testing.T, err error, wantKey string) {
	t.Helper()
	if coordination.KindOf(err) != coordination.Fatal {
		t.Fatalf("err = %v, want the Fatal store rollback", err)
	}
	m := rollbackReason.FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("err = %v, want a store rollback naming the key, both revisions and the fix", err)
	}
	got, _ := strconv.ParseUint(m[3], 10, 64)
	seen, _ := strconv.ParseUint(m[4], 10, 64)
	if got >= seen || (wantKey != "" && m[2] != wantKey) {
		t.Fatalf("err = %v, want key %q below the revision seen", err, wantKey)
	}
	if strings.Contains(err.Error(), "watermark") {
		t.Fatalf("err = %v blames the source's watermark", err)
	}
}

// startRolledBack runs w1 on a two-split job until it committed both, copies
// the store, lets the fleet write on for a few heartbeats (presence and
// leader renewals) and returns the copy.
func startRolledBack(t *testing.T, f *Fleet) (*Member, storeCopy) {
	t.Helper()
	splits, p := newJob(2)
	w1 := f.Start("w1", p)
	w1.Policy.Work = WorkCommit
	w1.Policy.ExpectFatal = true
	f.Until("w1 committed both splits", func() bool {
		for _, s := range splits {
			if h, ok := w1.Tenancy(s); !ok || h.Committed == nil {
				return false
			}
		}
		return true
	})
	old := copyStore(t, f.Store())
	// Enough heartbeats that the copy's revisions, which writes on the copy
	// reuse, stay below those the worker applied since.
	f.Advance(f.Config().LeaseDuration * 2)
	return w1, old
}

// The watches re-established on the rolled-back store deliver snapshots
// that show keys below the revisions already applied.
func TestFleetRollbackSeenByAWatchSnapshotIsFatal(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		w1, old := startRolledBack(t, f)
		w1.Store().Replace(old.restore(t, f))
		f.Until("w1 fails", func() bool { return w1.Err() != nil })
		wantRollback(t, w1.Err(), "")
	})
}

// With the watches down, the reconcile listing of the rolled-back store
// shows the same.
func TestFleetRollbackSeenByAReconcileListingIsFatal(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		w1, old := startRolledBack(t, f)
		w1.Store().BlockWatches()
		w1.Store().Replace(old.restore(t, f))
		f.Until("w1 fails", func() bool { return w1.Err() != nil })
		wantRollback(t, w1.Err(), "")
	})
}

// A commit whose CAS loses and whose read-back finds the progress record
// below the revision this tenancy wrote: the store lost the tenancy's own
// commit. The rest of the store is intact, so only the commit path sees it.
func TestFleetRollbackOfAProgressRecordFailsTheCommit(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(2)
		w1 := f.Start("w1", p)
		w1.Policy.Work = WorkCommit
		w1.Policy.ExpectFatal = true
		victim := splits[0]
		f.Until("w1 committed the split", func() bool {
			h, ok := w1.Tenancy(victim)
			return ok && h.Committed != nil
		})
		key := protocol.ProgressKey(victim)
		older, _, _ := f.Store().Get(t.Context(), store.Durable, key)
		h, _ := w1.Tenancy(victim)
		if err := w1.Commit(victim, coordination.SplitProgress{Watermark: h.Committed.Watermark + 1}); err != nil {
			t.Fatalf("commit: %v", err)
		}
		now := copyStore(t, f.Store())
		for i, e := range now[store.Durable] {
			if e.Key == key {
				now[store.Durable][i] = older
			}
		}
		w1.Store().Replace(now.restore(t, f))
		f.Advance(2 * f.Step()) // the watches re-open on the copy: nothing below what was applied
		if err := w1.Err(); err != nil {
			t.Fatalf("failed before the commit: %v", err)
		}
		err := w1.Commit(victim, coordination.SplitProgress{Watermark: h.Committed.Watermark + 2})
		wantRollback(t, err, key)
	})
}
