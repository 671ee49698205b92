package splitwriter

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/messages"
	"github.com/spate-go/coordination/store/memstore"
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

// A won claim starts its tenancy in the split writer's own step, with no
// relay through the root: the commit writer is posted the tenancy's
// opening CellChanged, the root is raised its Gained, and the tenancy is held at
// once (a Fail of it is applied, not refused as not held). A split record
// that already shows the tenancy fenced ends it only after its Gained was
// raised, so the root emits the Gained before the Lost (E1).
func TestAWonClaimStartsTheTenancyInOneStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, clk := workertest.NewEngine(t)
		st := memstore.New(1500*time.Millisecond, memstore.WithClock(clk))
		desk := &workertest.Desk{}
		_, writer, rec, sent := spawnLoneSplitWriterOnWith(t, e, clk, st, func(v *worker.Env) { v.Commits = desk })
		fenced := protocol.SplitRecord{ID: "b", Weight: 1, Epoch: 3, Owner: "w2", Nonce: "m", Status: protocol.StatusRunnable}
		for _, m := range []any{
			won("a", 2),
			messages.FailSplit{Split: "a", Epoch: 2, Reason: "poison", ReplyTo: rec},
			recordmsg.RecordsChanged{Records: []recordmsg.RecordChanged{{Split: "b", Record: fenced, Rev: 9}}},
			won("b", 2),
		} {
			e.Send(writer, m)
		}
		synctest.Wait()
		msgs := sent()
		at := func(want any) int {
			return slices.IndexFunc(msgs, func(m any) bool { return reflect.DeepEqual(m, want) })
		}
		if at(raised(coordination.Gained{Split: coordination.SplitSpec{ID: "a"}, Epoch: 2})) < 0 {
			t.Fatalf("sent %v, want a's Gained raised", msgs)
		}
		if i := slices.IndexFunc(msgs, func(m any) bool {
			r, ok := m.(messages.FailSplitReply)
			return ok && errors.Is(r.Err, coordination.ErrFenced) && r.Split == "a"
		}); i < 0 {
			t.Fatalf("sent %v, want the Fail applied (Fenced: no record to write on), not refused", msgs)
		}
		notHeld := worker.NotHeld("a").Error()
		if r := slices.IndexFunc(msgs, func(m any) bool {
			r, ok := m.(messages.FailSplitReply)
			return ok && r.Err != nil && r.Err.Error() == notHeld
		}); r >= 0 {
			t.Fatalf("sent %v: the Fail was refused as not held", msgs)
		}
		gained := at(raised(coordination.Gained{Split: coordination.SplitSpec{ID: "b"}, Epoch: 2}))
		lost := at(raised(coordination.Lost{Split: "b"}))
		if gained < 0 || lost < 0 || lost < gained {
			t.Fatalf("sent %v: b's Gained at %d, its Lost at %d; want both, the Lost after", msgs, gained, lost)
		}
		// Each tenancy's cell opens at its start and closes at its end (a's
		// Fail, b's fence), in the order the registry applied them.
		type cell struct {
			split  coordination.SplitID
			epoch  uint64
			closed bool
		}
		var cells []cell
		for _, m := range desk.Posts() {
			c, ok := m.(worker.CellChanged)
			if !ok {
				t.Fatalf("posted %#v to the commit writer, want only CellChanged", m)
			}
			cells = append(cells, cell{c.Split, c.Epoch, c.Closed})
		}
		want := []cell{{"a", 2, false}, {"a", 2, true}, {"b", 2, false}, {"b", 2, true}}
		if !slices.Equal(cells, want) {
			t.Fatalf("posted cells %v, want %v", cells, want)
		}
	})
}
