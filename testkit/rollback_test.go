package testkit

import (
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

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

var rollbackReason = regexp.MustCompile(`store rollback: (durable|ephemeral) key (\S+) is at revision (\d+), below revision (\d+) this worker already saw; the store lost acknowledged writes \(.+\), or restore the job from scratch`)

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
	untilCommitted(f, w1, splits)
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
		untilCommitted(f, w1, []coordination.SplitID{victim})
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

// A progress record above its split record's epoch (what a rolled-back
// store held after a worker recreated the progress record it lost at its
// old epoch, or a hand edit) made every claim of the split "superseded":
// the claimant kept the split record and never ran it, and a fresh fleet
// on that store hung with nothing logged above DEBUG. The claim hands the
// split back at the progress record's epoch, the next claim fences above
// it, and the job completes, replaying from the progress record. The
// fresh worker runs on a copy of the store (the rolled-back database),
// which the fleet's invariant checker does not watch: the checker's only
// complaints allowed are that it saw none of w2's claims.
func TestFleetProgressAboveItsSplitRecordIsClaimedAboveIt(t *testing.T) {
	var logs logBuffer
	synctest.Test(t, func(t *testing.T) {
		unseen := regexp.MustCompile(`^I5: split s0[01]: member w2 gained epoch \d+ but no record version names it at that epoch$`)
		f := NewFleet(t, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), withFailHandler(func(msg string) {
			for _, line := range strings.Split(strings.TrimPrefix(msg, "testkit: invariant violated:\n"), "\n") {
				if !unseen.MatchString(line) {
					t.Errorf("%s", msg)
					return
				}
			}
		}))
		defer func() { // a failure was reported through the handler above
			if r := recover(); r != nil {
				if _, ok := r.(fleetFailure); !ok {
					panic(r)
				}
			}
		}()
		splits, p := newJob(2)
		w1 := f.Start("w1", p)
		w1.Policy.Work = WorkCommit
		untilCommitted(f, w1, splits)
		if err := w1.Depart(); err != nil {
			t.Fatalf("Depart: %v", err)
		}
		victim := splits[0]
		rec, _ := f.Record(victim)
		prog, _ := readProgress(t, f, victim)
		old := copyStore(t, f.Store())
		for i, e := range old[store.Durable] {
			if e.Key == protocol.ProgressKey(victim) {
				old[store.Durable][i].Value = protocol.EncodeProgress(prog.Fence("w1", rec.Epoch+5, 0))
			}
		}
		rolledBack := old.restore(t, f)
		f.ArmNextStart(func(fs *FaultStore) { fs.Replace(rolledBack) })
		w2 := f.Start("w2", p)
		w2.Policy.Work = WorkComplete
		f.Until("w2's verdict", func() bool { return w2.Verdict() != nil || w2.Err() != nil })
		if _, ok := w2.Verdict().(coordination.AllComplete); !ok {
			t.Fatalf("verdict = %#v (err %v), want AllComplete", w2.Verdict(), w2.Err())
		}
		if !strings.Contains(logs.String(), "progress record is at or above this claim's epoch") {
			t.Fatal("no warning names the superseded claim")
		}
	})
}

// A store rolled back to before a split was claimed lost both the claim
// and the progress record it fenced. A commit of the tenancy that finds
// its progress record missing used to recreate it at the tenancy's epoch,
// above the restored split record's, before any check noticed the
// rollback (and a fresh fleet then hung on that split). The commit reads
// the split record first: below the tenancy's epoch it is Fatal naming the
// rollback, and nothing is recreated.
func TestFleetRollbackBelowTheClaimRecreatesNoProgressRecord(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(2)
		w1 := f.Start("w1", p)
		w1.Policy.Work = WorkCommit
		w1.Policy.ExpectFatal = true
		victim := splits[0]
		untilCommitted(f, w1, []coordination.SplitID{victim})
		// The copy from before the claim: the split record seeded (epoch 0,
		// no owner), no progress record.
		before := copyStore(t, f.Store())
		pkey, skey := protocol.ProgressKey(victim), protocol.SplitKey(victim)
		kept := before[store.Durable][:0]
		for _, e := range before[store.Durable] {
			switch e.Key {
			case pkey:
				continue
			case skey:
				rec, err := protocol.DecodeSplit(skey, e.Value, protocol.Fingerprint(jobFP))
				if err != nil {
					t.Fatal(err)
				}
				rec.Epoch, rec.Owner, rec.Nonce, rec.Attempts = 0, "", "", 0
				e.Value = protocol.EncodeSplit(rec)
			}
			kept = append(kept, e)
		}
		before[store.Durable] = kept
		rolledBack := before.restore(t, f)
		w1.Store().BlockWatches()
		w1.Store().Replace(rolledBack)
		h, _ := w1.Tenancy(victim)
		err := w1.Commit(victim, coordination.SplitProgress{Watermark: h.Committed.Watermark + 1})
		if coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), "store rollback: durable key "+skey+" is at epoch 0, below epoch 1") {
			t.Fatalf("commit: %v, want the Fatal store rollback naming %s", err, skey)
		}
		if _, found, err := rolledBack.Get(t.Context(), store.Durable, pkey); err != nil || found {
			t.Fatalf("progress record on the rolled-back store: found %v (%v), want none", found, err)
		}
	})
}
