package testkit

import (
	"testing"

	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// Presence writes that land only after their caller's timeout, with the
// worker's watches down (found by TestFleetSystemProperty's late writes and
// watch outages, issue #12): every renewal lands, but no reply and no watch
// event says so.

// presenceUpdates matches this member's presence updates.
func presenceUpdates(id string) Match {
	return Match{Keyspace: store.Ephemeral, Prefix: protocol.WorkerKey(id), Ops: OpUpdate}
}

// The renewal's own read after its error finds this session's nonce at a
// newer revision, which confirms it (docs/protocol.md, "Sessions"): the
// worker keeps its session and every split, and no attempt is charged.
func TestFleetLateRenewalsWithoutAWatchKeepTheSession(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(2)
		w1 := f.Start("w1", p)
		f.Until("w1 holds both splits", func() bool { return allHeld(f, splits, "w1") })
		before := w1.Held()
		w1.Store().BlockWatches()
		late := w1.Store().LandLateEveryWrite(presenceUpdates("w1"))
		f.Advance(4 * lease)
		if !late.Fired() {
			t.Fatal("no renewal was late")
		}
		if w1.Losses() != 0 || w1.Err() != nil {
			t.Fatalf("after four leases of late renewals: %s (losses %d), want every split kept", w1, w1.Losses())
		}
		for id, h := range before {
			if now, ok := w1.Tenancy(id); !ok || now.Epoch != h.Epoch {
				t.Fatalf("split %s: tenancy %+v, want still held at epoch %d", id, now, h.Epoch)
			}
			if v, _ := f.Record(id); v.Attempts != 0 {
				t.Fatalf("split %s: record %s, want no attempt charged", id, v)
			}
		}
	})
}
