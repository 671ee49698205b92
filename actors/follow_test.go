package actors

import (
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/store/memstore"
)

// noCommits is a commit writer that takes every post and answers nothing.
type noCommits struct{}

func (noCommits) Post(any)                                     {}
func (noCommits) Ask(worker.CommitRequest) worker.CommitResult { return worker.CommitResult{} }

// The root owns the held tenancies and tells the revoke actor which to
// follow (actors/follow.go): at each tenancy start, assigned-set change and
// watch change it lists the held tenancies, each with whether the
// assignment names it, and none while the rules do not apply (no
// assignment record, a watch down, the verdict in). A tenancy it ended is
// never listed.
func TestRootTellsRevokeTheTenanciesToFollow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, clk := workertest.NewEngine(t)
		cfg := workertest.Config(t, clk, "w1")
		v := workertest.ActorEnv(e, memstore.New(cfg.LeaseDuration, memstore.WithClock(clk)), cfg, "n", nil)
		v.Commits = noCommits{}
		var mu sync.Mutex
		var got []any
		v.PIDs.Revoke = e.Spawn(func() actor.Receiver { return workertest.Recorder{Mu: &mu, Msgs: &got} }, "revoke")
		v.PIDs.Root = e.Spawn(newRoot(v), "root")
		t.Cleanup(func() {
			<-e.Poison(v.PIDs.Root).Done()
			<-e.Poison(v.PIDs.Revoke).Done()
			v.Cancel()
		})
		type ft = wire.FollowedTenancy
		steps := []struct {
			name string
			send any
			want []ft // the FollowAssignment's tenancies
		}{
			{"a claimed before any assignment", recordmsg.ClaimWon{Spec: coordination.SplitSpec{ID: "a"}, Epoch: 1, Nonce: "n"}, nil},
			{"watches live, no assignment yet", wire.WatchesChanged{Live: true}, nil},
			{"an assignment naming b", wire.AssignedSetChanged{Decided: true, Splits: []coordination.SplitID{"b"}}, []ft{{Split: "a", Epoch: 1}}},
			{"b claimed", recordmsg.ClaimWon{Spec: coordination.SplitSpec{ID: "b"}, Epoch: 3, Nonce: "n"}, []ft{{Split: "b", Epoch: 3, Assigned: true}}},
			{"an assignment naming both", wire.AssignedSetChanged{Decided: true, Splits: []coordination.SplitID{"a", "b"}}, []ft{{Split: "a", Epoch: 1, Assigned: true}, {Split: "b", Epoch: 3, Assigned: true}}},
			{"a's tenancy ended", wire.EndTenancy{Split: "a", Epoch: 1, Reason: wire.EndCompleted}, nil},
			{"an assignment naming neither", wire.AssignedSetChanged{Decided: true}, []ft{{Split: "b", Epoch: 3}}},
			{"a watch down", wire.WatchesChanged{Live: false}, nil},
			{"the watches live again", wire.WatchesChanged{Live: true}, []ft{{Split: "b", Epoch: 3}}},
			{"the assignment record deleted", wire.AssignedSetChanged{}, nil},
			{"an assignment again", wire.AssignedSetChanged{Decided: true}, []ft{{Split: "b", Epoch: 3}}},
			{"the verdict", wire.VerdictReached{}, nil},
			{"after the verdict", wire.WatchesChanged{Live: true}, nil},
		}
		for _, s := range steps {
			e.Send(v.PIDs.Root, s.send)
			synctest.Wait()
			mu.Lock()
			var follows []wire.FollowAssignment
			for _, m := range got {
				if f, ok := m.(wire.FollowAssignment); ok {
					follows = append(follows, f)
				}
			}
			got = nil
			mu.Unlock()
			switch {
			case s.name == "the verdict" || s.name == "a's tenancy ended":
				if len(follows) != 0 {
					t.Fatalf("%s: told revoke %v, want nothing to follow", s.name, follows)
				}
			case len(follows) != 1 || !slices.Equal(follows[0].Tenancies, s.want):
				t.Fatalf("%s: told revoke %v, want one FollowAssignment of %v", s.name, follows, s.want)
			}
		}
	})
}
