package watch

import (
	"maps"
	"testing"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination/actors/internal/wire"
)

// The watch owns the live members: each presence put or deletion changes
// them, and the snapshot it sends with the change shows every member live
// after it, and keeps showing that after later changes (a receiver keeps it
// as sent).
func TestTheWatchSnapshotsTheLiveMembersAtEachChange(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := &watchActor{live: wire.LiveMembers{}}
		model := map[string]wire.Member{}
		type sent struct {
			snap wire.Members
			want map[string]wire.Member
		}
		var all []sent
		for range rapid.IntRange(1, 40).Draw(t, "changes") {
			inst := rapid.SampledFrom([]string{"w1", "w2", "w3"}).Draw(t, "member")
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
			for i, s := range all {
				got := maps.Collect(s.snap.All())
				if !maps.Equal(got, s.want) || s.snap.Len() != len(s.want) {
					t.Fatalf("snapshot %d of %d shows %v, want %v", i+1, len(all), got, s.want)
				}
			}
		}
	})
}
