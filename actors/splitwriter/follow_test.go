package splitwriter

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
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
		steps := []struct {
			name string
			send any
			want []ft // the FollowAssignment's tenancies; nil with none: no FollowAssignment
			none bool // no FollowAssignment at all
		}{
			{name: "watches live, no assignment yet", send: wire.WatchesChanged{Live: true}},
			{name: "an assignment naming b", send: wire.AssignedSetChanged{Decided: true, Splits: []coordination.SplitID{"b"}}, want: []ft{{Split: "a", Epoch: 1}}},
			{name: "b claimed", send: won("b", 3), want: []ft{{Split: "b", Epoch: 3, Assigned: true}}},
			{name: "an assignment naming both", send: wire.AssignedSetChanged{Decided: true, Splits: []coordination.SplitID{"a", "b"}}, want: []ft{{Split: "a", Epoch: 1, Assigned: true}, {Split: "b", Epoch: 3, Assigned: true}}},
			{name: "a's tenancy ended", send: wire.EndTenancy{Split: "a", Epoch: 1, Reason: wire.EndCompleted}, none: true},
			{name: "an assignment naming neither", send: wire.AssignedSetChanged{Decided: true}, want: []ft{{Split: "b", Epoch: 3}}},
			{name: "a watch down", send: wire.WatchesChanged{Live: false}},
			{name: "the watches live again", send: wire.WatchesChanged{Live: true}, want: []ft{{Split: "b", Epoch: 3}}},
			{name: "the assignment record deleted", send: wire.AssignedSetChanged{}},
			{name: "an assignment again", send: wire.AssignedSetChanged{Decided: true}, want: []ft{{Split: "b", Epoch: 3}}},
			{name: "Depart began", send: wire.DepartJob{}, none: true},
			{name: "after Depart", send: wire.WatchesChanged{Live: true}},
		}
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
