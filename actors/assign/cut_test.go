package assign

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/store/memstore"
)

// Each cut request of an applied assignment record goes to the commit
// writer as one CutAsked (docs/protocol.md, "Runtime split"); a record of
// an older generation than the one applied posts nothing, and neither does
// a record without requests.
func TestTheAssignActorPostsEachCutRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := workertest.NewEngine(t)
		var mu sync.Mutex
		var got []any
		rec := e.Spawn(func() actor.Receiver { return workertest.Recorder{Mu: &mu, Msgs: &got} }, "rec")
		v := workertest.NewEnv(t, memstore.New(0))
		v.Engine = e
		v.Ctx, v.Cancel = context.WithCancel(context.Background())
		v.PIDs = worker.PIDs{SplitWriter: rec, Revoke: rec}
		desk := &workertest.Desk{}
		v.Commits = desk
		pid := e.Spawn(New(v), "assign")
		t.Cleanup(func() {
			v.Cancel()
			<-e.Poison(pid).Done()
			<-e.Poison(rec).Done()
		})
		cuts := []protocol.CutRequest{{Split: "a", Epoch: 3, Counter: 1, KeepPPM: 600_000, Parts: 1}, {Split: "c", Epoch: 1, Counter: 2, KeepPPM: 500_000, Parts: 1}}
		ids := []coordination.SplitID{"a", "b", "c"}
		for _, a := range []protocol.AssignmentRecord{
			{Generation: 2, Splits: ids, Cuts: cuts},
			{Generation: 1, Splits: ids, Cuts: []protocol.CutRequest{{Split: "b", Epoch: 9, Counter: 1, KeepPPM: 500_000, Parts: 1}}}, // older
			{Generation: 2, Splits: ids}, // no requests
		} {
			e.Send(pid, recordmsg.AssignmentChanged{Instance: "me", Assignment: a})
		}
		synctest.Wait()
		want := []any{
			worker.CutAsked{Split: "a", Epoch: 3, Counter: 1, KeepPPM: 600_000, Parts: 1},
			worker.CutAsked{Split: "c", Epoch: 1, Counter: 2, KeepPPM: 500_000, Parts: 1},
		}
		if posts := desk.Posts(); !reflect.DeepEqual(posts, want) {
			t.Fatalf("posted %+v, want %+v", posts, want)
		}
	})
}
