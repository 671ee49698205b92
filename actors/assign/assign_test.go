package assign

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"pgregory.net/rapid"

	"github.com/anthdm/hollywood/actor"
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/store/memstore"
)

// TestDiffAssigned checks the assignment's diff against set arithmetic:
// added is next minus old, removed is old minus next, and together with
// what both name they account for every split of either, each once.
func TestDiffAssigned(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.SampledFrom([]coordination.SplitID{"a", "b", "c", "d", "e", "f"})
		old := map[coordination.SplitID]bool{}
		for _, s := range rapid.SliceOfDistinct(id, func(s coordination.SplitID) coordination.SplitID { return s }).Draw(t, "old") {
			old[s] = true
		}
		next := rapid.SliceOfDistinct(id, func(s coordination.SplitID) coordination.SplitID { return s }).Draw(t, "next")
		set, added, removed := diffAssigned(old, next)
		if len(set) != len(next) {
			t.Fatalf("set %v, want the %d splits of %v", set, len(next), next)
		}
		for _, s := range next {
			if !set[s] {
				t.Fatalf("set %v lacks %s", set, s)
			}
			if slices.Contains(added, s) == old[s] {
				t.Fatalf("%s: in added %v, in old %v", s, added, old[s])
			}
		}
		for s := range old {
			if slices.Contains(removed, s) == set[s] {
				t.Fatalf("%s: in removed %v, in next %v", s, removed, set[s])
			}
		}
		for _, s := range removed {
			if !old[s] {
				t.Fatalf("removed %v names %s, which old did not", removed, s)
			}
		}
		if !slices.IsSorted(removed) {
			t.Fatalf("removed %v is not sorted", removed)
		}
	})
}

// The assign actor tells the split writer one diff per
// applied record, newest generation first: a record of an older generation
// than the one applied changes nothing, and the record's deletion makes the
// assignment undecided.
func TestTheAssignActorTellsOneDiffPerRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := workertest.NewEngine(t)
		var mu sync.Mutex
		var got []any
		rec := e.Spawn(func() actor.Receiver { return workertest.Recorder{Mu: &mu, Msgs: &got} }, "rec")
		v := workertest.NewEnv(t, memstore.New(0))
		v.Engine = e
		v.Ctx, v.Cancel = context.WithCancel(context.Background())
		v.PIDs = worker.PIDs{SplitWriter: rec}
		pid := e.Spawn(New(v), "assign")
		t.Cleanup(func() {
			v.Cancel()
			<-e.Poison(pid).Done()
			<-e.Poison(rec).Done()
		})
		record := func(gen uint64, ids ...coordination.SplitID) recordmsg.AssignmentChanged {
			return recordmsg.AssignmentChanged{Instance: "me", Assignment: protocol.AssignmentRecord{Generation: gen, Splits: ids}}
		}
		for _, m := range []any{record(2, "a", "b"), record(1, "z"), record(3, "b", "c"), recordmsg.AssignmentChanged{Instance: "me", Deleted: true}} {
			e.Send(pid, m)
		}
		synctest.Wait()
		ids := func(s ...coordination.SplitID) []coordination.SplitID { return s }
		want := []wire.AssignedSetChanged{
			{Decided: true, Splits: ids("a", "b"), Added: ids("a", "b")},
			{Decided: true, Splits: ids("b", "c"), Added: ids("c"), Removed: ids("a")},
			{},
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != len(want) {
			t.Fatalf("got %d messages %v, want each of %d diffs once (split writer)", len(got), got, len(want))
		}
		for i, m := range got {
			if !reflect.DeepEqual(m, want[i]) {
				t.Fatalf("message %d: %+v, want %+v", i, m, want[i])
			}
		}
	})
}
