package actors

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/recordmsg"
)

func TestRegistryStartAndHolds(t *testing.T) {
	tests := []struct {
		name  string
		start []worker.Tenancy // started in order on split "a", each ended before the next unless keep
		keep  bool
		try   worker.Tenancy
		want  bool
	}{
		{name: "first tenancy", try: worker.Tenancy{Epoch: 1, Nonce: "n"}, want: true},
		{name: "a newer epoch after an end", start: []worker.Tenancy{{Epoch: 1}}, try: worker.Tenancy{Epoch: 2}, want: true},
		{name: "the same epoch again", start: []worker.Tenancy{{Epoch: 2}}, try: worker.Tenancy{Epoch: 2}, want: false},
		{name: "an older epoch", start: []worker.Tenancy{{Epoch: 3}}, try: worker.Tenancy{Epoch: 2}, want: false},
		{name: "while held", start: []worker.Tenancy{{Epoch: 1}}, keep: true, try: worker.Tenancy{Epoch: 2}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newRegistry()
			for _, s := range tt.start {
				if !g.start("a", s) {
					t.Fatalf("setup start %v refused", s)
				}
				if !tt.keep {
					g.end("a")
				}
			}
			if got := g.start("a", tt.try); got != tt.want {
				t.Fatalf("start(%v) = %v, want %v", tt.try, got, tt.want)
			}
			if got := g.holds("a", tt.try.Epoch); got != tt.want && !tt.keep {
				t.Fatalf("holds after start = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRegistryFiltersStaleEnds is the registry's rule as a property: over
// any sequence of starts and ends (some naming stale epochs), holds is true
// exactly for the last started tenancy of a split not ended since, and a
// start is accepted only for a free split at an epoch above every earlier
// one.
func TestRegistryFiltersStaleEnds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := newRegistry()
		model := map[coordination.SplitID]uint64{}
		last := map[coordination.SplitID]uint64{}
		ids := []coordination.SplitID{"a", "b"}
		for range rapid.IntRange(1, 40).Draw(t, "steps") {
			id := rapid.SampledFrom(ids).Draw(t, "id")
			epoch := rapid.Uint64Range(1, 6).Draw(t, "epoch")
			if rapid.Bool().Draw(t, "start") {
				_, held := model[id]
				want := !held && epoch > last[id]
				if got := g.start(id, worker.Tenancy{Epoch: epoch}); got != want {
					t.Fatalf("start(%s, %d) = %v, want %v", id, epoch, got, want)
				}
				if want {
					model[id], last[id] = epoch, epoch
				}
				continue
			}
			// An end is applied only when it names the held tenancy.
			if g.holds(id, epoch) {
				g.end(id)
				delete(model, id)
			}
			for _, id := range ids {
				e, ok := g.epoch(id)
				if me, mok := model[id]; ok != mok || e != me {
					t.Fatalf("split %s: registry (%d, %v), model (%d, %v)", id, e, ok, me, mok)
				}
			}
			if g.len() != len(model) {
				t.Fatalf("len %d, model %d", g.len(), len(model))
			}
		}
	})
}

func TestHeldViewFollowsTheRootsChanges(t *testing.T) {
	h := worker.HeldView{}
	h.Apply(wire.TenancyStarted{Split: "a", Epoch: 2, Nonce: "n"})
	h.Apply(wire.TenancyStarted{Split: "b", Epoch: 1, Nonce: "n"})
	if !h.Holds("a", 2) || h.Holds("a", 1) || h["a"].Nonce != "n" {
		t.Fatalf("after starts: %v", h)
	}
	h.Apply(wire.TenancyEnded{Split: "a", Epoch: 2, Reason: wire.EndReleased})
	h.Apply(recordmsg.RecordObserved{Split: "b"}) // not a registry change: ignored
	if h.Holds("a", 2) || !h.Holds("b", 1) || len(h) != 1 {
		t.Fatalf("after the end: %v", h)
	}
}
