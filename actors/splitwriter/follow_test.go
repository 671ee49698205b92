package splitwriter

import (
	"reflect"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/store/memstore"
)

// won is the report of a landed claim of split id at epoch, as the claim's
// goroutine sends it.
func won(id coordination.SplitID, epoch uint64) claimDone {
	return claimDone{
		op:  claimOp{claim: claimRequest{Candidate: protocol.Candidate{ID: id, Kind: protocol.KindCreate}}},
		res: claimed{outcome: worker.CASLanded, kind: protocol.KindCreate, spec: coordination.SplitSpec{ID: id}, rec: protocol.SplitRecord{ID: id, Epoch: epoch, Owner: "w1", Nonce: "n"}},
	}
}

// followStep is one message sent to the split writer and what it must
// tell revoke: one FollowAssignment of want, or (none) no FollowAssignment.
type followStep struct {
	name string
	send any
	want []wire.FollowedTenancy
	none bool
}

// checkFollows sends each step's message to writer and checks what sent
// shows it told revoke.
func checkFollows(t *testing.T, e *actor.Engine, writer *actor.PID, sent func() []any, steps []followStep) {
	t.Helper()
	seen := 0
	for _, s := range steps {
		e.Send(writer, s.send)
		synctest.Wait()
		msgs := sent()
		var follows []wire.FollowAssignment
		for _, m := range msgs[seen:] {
			if f, ok := m.(wire.FollowAssignment); ok {
				follows = append(follows, f)
			}
		}
		seen = len(msgs)
		switch {
		case s.none:
			if len(follows) != 0 {
				t.Fatalf("%s: told revoke %v, want nothing to follow", s.name, follows)
			}
		case len(follows) != 1 || !slices.Equal(follows[0].Tenancies, s.want):
			t.Fatalf("%s: told revoke %v, want one FollowAssignment of %v", s.name, follows, s.want)
		}
	}
}

// The split writer owns the held tenancies and tells the revoke actor
// which to follow (follow.go): at each tenancy start, assigned-set change
// and watch change it lists the held tenancies, each with whether the
// assignment names it, and none while the rules do not apply (no
// assignment record, a watch down, Depart begun). A tenancy it ended is
// never listed.
func TestTheSplitWriterTellsRevokeTheTenanciesToFollow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, writer, _, sent := spawnLoneSplitWriter(t, wire.HeldSplit{Split: "a", Epoch: 1})
		type ft = wire.FollowedTenancy
		steps := []followStep{
			{name: "watches live, no assignment yet", send: wire.WatchesChanged{Live: true}},
			{name: "an assignment naming b", send: assignmentOf("b"), want: []ft{{Split: "a", Epoch: 1}}},
			{name: "b claimed", send: won("b", 3), want: []ft{{Split: "b", Epoch: 3, Assigned: true}}},
			{name: "an assignment naming both", send: assignmentOf("a", "b"), want: []ft{{Split: "a", Epoch: 1, Assigned: true}, {Split: "b", Epoch: 3, Assigned: true}}},
			{name: "a's tenancy ended", send: wire.EndTenancy{Split: "a", Epoch: 1, Reason: wire.EndCompleted}, none: true},
			{name: "an assignment naming neither", send: assignmentOf(), want: []ft{{Split: "b", Epoch: 3}}},
			{name: "a watch down", send: wire.WatchesChanged{Live: false}},
			{name: "the watches live again", send: wire.WatchesChanged{Live: true}, want: []ft{{Split: "b", Epoch: 3}}},
			{name: "the assignment record deleted", send: recordmsg.AssignmentChanged{Deleted: true}},
			{name: "an assignment again", send: assignmentOf(), want: []ft{{Split: "b", Epoch: 3}}},
			{name: "Depart began", send: wire.DepartJob{}, none: true},
			{name: "after Depart", send: wire.WatchesChanged{Live: true}},
		}
		checkFollows(t, e, writer, sent, steps)
	})
}

// After the verdict the rules do not apply, whatever the other inputs.
func TestNoTenancyIsFollowedAfterTheVerdict(t *testing.T) {
	sw := New(workertest.NewEnv(t, memstore.New(time.Second)))().(*splitWriterActor)
	sw.claims.decided, sw.claims.live = true, true
	if !sw.following() {
		t.Fatal("not following with an assignment and live watches")
	}
	sw.verdict = true
	if sw.following() {
		t.Fatal("following after the verdict")
	}
}

// The split writer applies this worker's assignment records newest
// generation first: a record of an older generation than the one applied
// changes nothing (revoke is told nothing), the record's deletion makes the
// assignment undecided (nothing is followed), and a record after it is
// applied whatever the generation applied before.
func TestTheSplitWriterAppliesTheNewestAssignmentRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, writer, _, sent := spawnLoneSplitWriter(t, wire.HeldSplit{Split: "a", Epoch: 1}, wire.HeldSplit{Split: "b", Epoch: 2})
		type ft = wire.FollowedTenancy
		steps := []followStep{
			{name: "watches live", send: wire.WatchesChanged{Live: true}},
			{name: "generation 2 naming a", send: assignmentAt(2, "a"), want: []ft{{Split: "a", Epoch: 1, Assigned: true}, {Split: "b", Epoch: 2}}},
			{name: "generation 1 naming b", send: assignmentAt(1, "b"), none: true},
			{name: "generation 3 naming b", send: assignmentAt(3, "b"), want: []ft{{Split: "a", Epoch: 1}, {Split: "b", Epoch: 2, Assigned: true}}},
			{name: "the record deleted", send: recordmsg.AssignmentChanged{Instance: "w1", Deleted: true}},
			{name: "generation 3 naming both", send: assignmentAt(3, "a", "b"), want: []ft{{Split: "a", Epoch: 1, Assigned: true}, {Split: "b", Epoch: 2, Assigned: true}}},
		}
		checkFollows(t, e, writer, sent, steps)
	})
}

// Each cut request of an applied assignment record goes to the commit
// writer as one CutAsked (docs/protocol.md, "Runtime split"); a record of
// an older generation than the one applied posts nothing, and neither does
// a record without requests.
func TestTheSplitWriterPostsEachCutRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, clk := workertest.NewEngine(t)
		desk := &workertest.Desk{}
		_, writer, _, _ := spawnLoneSplitWriterOnWith(t, e, clk, memstore.New(1500*time.Millisecond, memstore.WithClock(clk)), func(v *worker.Env) { v.Commits = desk })
		cuts := []protocol.CutRequest{{Split: "a", Epoch: 3, Counter: 1, KeepPPM: 600_000, Parts: 1}, {Split: "c", Epoch: 1, Counter: 2, KeepPPM: 500_000, Parts: 1}}
		ids := []coordination.SplitID{"a", "b", "c"}
		for _, a := range []protocol.AssignmentRecord{
			{Generation: 2, Splits: ids, Cuts: cuts},
			{Generation: 1, Splits: ids, Cuts: []protocol.CutRequest{{Split: "b", Epoch: 9, Counter: 1, KeepPPM: 500_000, Parts: 1}}}, // older
			{Generation: 2, Splits: ids}, // no requests
		} {
			e.Send(writer, recordmsg.AssignmentChanged{Instance: "w1", Assignment: a})
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
