package watch

import (
	"fmt"
	"maps"
	"runtime"
	"testing"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination/actors/internal/wire"
)

// The watch owns the live members: each presence put or deletion changes
// them, and the snapshot it sends with the change shows every member live
// after it, and keeps showing that after later changes (a receiver keeps it
// as sent). Enough changes of enough members to fill a snapshot's recent
// changes many times over (a new base every 8 changes here).
func TestTheWatchSnapshotsTheLiveMembersAtEachChange(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := &watchActor{live: wire.LiveMembers{}}
		model := map[string]wire.Member{}
		type sent struct {
			snap wire.Members
			want map[string]wire.Member
		}
		var all []sent
		pool := rapid.IntRange(1, 40).Draw(t, "members")
		for range rapid.IntRange(1, 120).Draw(t, "changes") {
			inst := fmt.Sprintf("w%d", rapid.IntRange(1, pool).Draw(t, "member"))
			put := rapid.Bool().Draw(t, "put")
			m := wire.Member{
				Nonce:       rapid.SampledFrom([]string{"n1", "n2"}).Draw(t, "nonce"),
				MaxInFlight: uint32(rapid.IntRange(0, 2).Draw(t, "budget")),
			}
			if put {
				model[inst] = m
			} else {
				delete(model, inst)
			}
			all = append(all, sent{w.presence(inst, m, put), maps.Clone(model)})
		}
		for i, s := range all {
			got := maps.Collect(s.snap.All())
			if !maps.Equal(got, s.want) || s.snap.Len() != len(s.want) {
				t.Fatalf("snapshot %d of %d shows %v (%d), want %v", i+1, len(all), got, s.snap.Len(), s.want)
			}
			for k := 1; k <= pool; k++ {
				inst := fmt.Sprintf("w%d", k)
				m, ok := s.snap.Get(inst)
				if want, live := s.want[inst]; ok != live || m != want || s.snap.Has(inst) != live {
					t.Fatalf("snapshot %d of %d: Get(%s) = %v, %v; want %v, %v", i+1, len(all), inst, m, ok, want, live)
				}
			}
		}
	})
}

// A peer with store access can write many presence keys: the watch's work
// per key must not grow with the members already live, as a full copy of
// them per change would (10,000 keys took 2.5 s of copying so). Sixteen
// times the keys may cost at most 128 times the bytes: a full copy per
// change costs 256 times, the snapshots' √n recent changes about 64.
func TestAFloodOfPresenceKeysCostsLessThanACopyPerKey(t *testing.T) {
	flood := func(n int) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		w := &watchActor{live: wire.LiveMembers{}}
		for i := range n {
			w.presence(fmt.Sprintf("fake-%d", i), wire.Member{Nonce: "x"}, true)
		}
		runtime.ReadMemStats(&after)
		if w.members.Len() != n {
			t.Fatalf("%d members live after %d puts", w.members.Len(), n)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := flood(500), flood(8000)
	ratio := float64(large) / float64(small)
	t.Logf("500 keys: %d bytes; 8,000 keys: %d bytes (%.0f×)", small, large, ratio)
	if ratio > 128 {
		t.Fatalf("8,000 presence keys allocated %.0f× what 500 did, want at most 128× (a full copy of the members per key is 256×)", ratio)
	}
}
