package revoke

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/messages"
)

// revokeRig runs a lone revoke actor whose root and split writer are one
// recorder.
type revokeRig struct {
	t    *testing.T
	e    *actor.Engine
	pid  *actor.PID
	root *actor.PID // the recorder
	clk  interface{ Add(time.Duration) }
	mu   sync.Mutex
	msgs []any
	reg  *prometheus.Registry
}

func newRevokeRig(t *testing.T) *revokeRig {
	e, clk := workertest.NewEngine(t)
	rr := &revokeRig{t: t, e: e, clk: clk, reg: prometheus.NewPedanticRegistry()}
	cfg := workertest.Config(t, clk, "w1")
	v := &worker.Env{Engine: e, Config: cfg, Clock: clk, ID: "w1", Log: workertest.DiscardLogger(), Latch: worker.NewLatch(), Backlog: &worker.Backlog{}, WG: &sync.WaitGroup{}, Metrics: worker.NewMetrics(rr.reg, "w1", workertest.DiscardLogger())}
	v.Ctx, v.Cancel = context.WithCancel(context.Background())
	v.PIDs.Root = e.Spawn(func() actor.Receiver { return workertest.Recorder{Mu: &rr.mu, Msgs: &rr.msgs} }, "root")
	rr.pid = e.Spawn(New(v), "revoke")
	rr.root = v.PIDs.Root
	v.PIDs.SplitWriter = v.PIDs.Root
	v.PIDs.Revoke = rr.pid
	t.Cleanup(func() {
		<-e.Poison(rr.pid).Done()
		<-e.Poison(v.PIDs.Root).Done()
	})
	return rr
}

func (rr *revokeRig) send(msgs ...any) {
	for _, m := range msgs {
		rr.e.Send(rr.pid, m)
	}
	synctest.Wait()
}

func (rr *revokeRig) take() []any {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	m := rr.msgs
	rr.msgs = nil
	return m
}

// follow is the split writer's FollowAssignment of one held tenancy.
func follow(id coordination.SplitID, epoch uint64, assigned bool) wire.FollowAssignment {
	return wire.FollowAssignment{Tenancies: []wire.FollowedTenancy{{Split: id, Epoch: epoch, Assigned: assigned}}}
}

func (rr *revokeRig) counter(outcome string) float64 {
	return workertest.CounterSum(rr.t, rr.reg, "coordination_revocations_total", outcome)
}

func TestRevocationCancelledThenSilentIsHandedBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rr := newRevokeRig(t)
		rr.send(follow("a", 1, true))
		if got := rr.take(); len(got) != 0 {
			t.Fatalf("assigned and held: %v", got)
		}
		rr.send(follow("a", 1, false))
		if got := rr.take(); len(got) != 1 || got[0] != (wire.RevocationChanged{Split: "a", Epoch: 1}) {
			t.Fatalf("request: %v", got)
		}
		rr.send(follow("a", 1, true))
		if got := rr.take(); len(got) != 0 {
			t.Fatalf("cancel told the root: %v", got)
		}
		// A winning commit refreshes the silence clock.
		rr.clk.Add(500 * time.Millisecond)
		rr.send(wire.CommitLanded{Split: "a", Epoch: 1})
		rr.clk.Add(500 * time.Millisecond)
		rr.send() // the deadline timer's turn
		if got := rr.take(); len(got) != 0 {
			t.Fatalf("forced although progress was recent: %v", got)
		}
		rr.clk.Add(300 * time.Millisecond)
		rr.send() // the deadline timer's turn
		if got := rr.take(); len(got) != 1 || got[0] != (wire.RevocationChanged{Split: "a", Epoch: 1, Forced: true}) {
			t.Fatalf("silent: %v", got)
		}
		if rr.counter("requested") != 1 || rr.counter("cancelled") != 1 || rr.counter("forced") != 0 || rr.counter("drained") != 0 {
			t.Fatalf("counters r=%v c=%v f=%v d=%v", rr.counter("requested"), rr.counter("cancelled"), rr.counter("forced"), rr.counter("drained"))
		}
	})
}

func TestRevocationReRequestKeepsStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rr := newRevokeRig(t)
		rr.send(follow("a", 1, false))
		rr.take()
		rr.clk.Add(500 * time.Millisecond)
		rr.send(follow("a", 1, true)) // cancel
		rr.clk.Add(300 * time.Millisecond)
		rr.send(wire.CommitLanded{Split: "a", Epoch: 1})
		// Re-requested 800ms after the start: already past DrainDeadline
		// (750ms), so it is forced in the same step.
		rr.send(follow("a", 1, false))
		got := rr.take()
		if len(got) != 2 || got[0] != (wire.RevocationChanged{Split: "a", Epoch: 1}) || got[1] != (wire.RevocationChanged{Split: "a", Epoch: 1, Forced: true}) {
			t.Fatalf("re-request: %v", got)
		}
		if rr.counter("requested") != 2 || rr.counter("cancelled") != 1 || rr.counter("forced") != 1 {
			t.Fatalf("requested=%v cancelled=%v forced=%v", rr.counter("requested"), rr.counter("cancelled"), rr.counter("forced"))
		}
	})
}

func TestRevocationOutcomes(t *testing.T) {
	start := func(rr *revokeRig) {
		rr.send(follow("a", 1, false))
		rr.take()
	}
	tests := []struct {
		name    string
		then    []any
		outcome string
	}{
		{"drained by ReleaseDrained", []any{wire.TenancyEnded{Split: "a", Epoch: 1, Reason: wire.EndDrained}, wire.HandBackResolved{Split: "a", Epoch: 1, Reason: wire.EndDrained, Outcome: wire.HandBackLanded}}, "drained"},
		{"drained by a completed commit", []any{wire.HandBackResolved{Split: "a", Epoch: 1, Reason: wire.EndCompleted, Outcome: wire.HandBackLanded}}, "drained"},
		{"forced by an unconfirmed hand-back", []any{wire.HandBackResolved{Split: "a", Epoch: 1, Reason: wire.EndDrained, Outcome: wire.HandBackUnconfirmed}}, "forced"},
		{"forced by Fail", []any{wire.HandBackResolved{Split: "a", Epoch: 1, Reason: wire.EndFailed, Outcome: wire.HandBackLanded}}, "forced"},
		{"forced by a fence", []any{wire.TenancyEnded{Split: "a", Epoch: 1, Reason: wire.EndFenced}}, "forced"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rr := newRevokeRig(t)
				start(rr)
				rr.send(tt.then...)
				for _, o := range []string{"drained", "forced", "cancelled"} {
					want := 0.0
					if o == tt.outcome {
						want = 1
					}
					if got := rr.counter(o); got != want {
						t.Fatalf("%s = %v, want %v", o, got, want)
					}
				}
				// requested = drained + forced + cancelled + live entries.
				if rr.counter("requested") != 1 {
					t.Fatalf("requested = %v", rr.counter("requested"))
				}
			})
		})
	}
}

// A DeclineRevoke that reaches the revoke actor after the root surrendered
// the split (Release, ReleaseDrained, Fail) finds a tenancy no longer held:
// there is nothing left to decline, so it answers nil at once, forces
// nothing, and the entry settles by its hand-back's outcome (§6.11, §20.2).
func TestDeclineAfterSurrenderAnswersAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rr := newRevokeRig(t)
		rr.send(follow("a", 1, false))
		rr.take()
		rr.send(wire.TenancyEnded{Split: "a", Epoch: 1, Reason: wire.EndReleased},
			messages.DeclineRevoke{Split: "a", Epoch: 1, ReplyTo: rr.root})
		if got := rr.take(); len(got) != 1 || got[0] != (messages.DeclineRevokeReply{Split: "a"}) {
			t.Fatalf("decline after release: %v", got)
		}
		rr.send(wire.HandBackResolved{Split: "a", Epoch: 1, Reason: wire.EndReleased, Outcome: wire.HandBackLanded})
		if rr.counter("drained") != 1 || rr.counter("forced") != 0 {
			t.Fatalf("drained=%v forced=%v", rr.counter("drained"), rr.counter("forced"))
		}
	})
}

// A split that completes right after its claim, and that the leader drops
// from the assignment while the completion's split-record write runs: the
// root tells revoke the tenancy's TenancyEnded, then lists no tenancy to
// follow for the smaller assigned set (it no longer holds the split), then
// the HandBackResolved arrives. No revocation may begin for it: the root
// would drop the request, leaving an entry that is forced at DrainDeadline
// ("drain started", never accepted).
func TestRevocationNotBegunForATenancyAlreadySurrendered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rr := newRevokeRig(t)
		rr.send(follow("a", 1, true),
			wire.TenancyEnded{Split: "a", Epoch: 1, Reason: wire.EndCompleted},
			wire.FollowAssignment{},
			wire.HandBackResolved{Split: "a", Epoch: 1, Reason: wire.EndCompleted, Outcome: wire.HandBackLanded})
		rr.clk.Add(time.Second) // past DrainDeadline (750ms): the deadline timer's turn
		rr.send()
		if got := rr.take(); len(got) != 0 {
			t.Fatalf("revocation of a surrendered tenancy: %v", got)
		}
		if rr.counter("requested") != 0 || rr.counter("forced") != 0 {
			t.Fatalf("requested=%v forced=%v, want 0 and 0", rr.counter("requested"), rr.counter("forced"))
		}
		// A later tenancy of the split is revoked as usual.
		rr.send(follow("a", 2, false))
		if got := rr.take(); len(got) != 1 || got[0] != (wire.RevocationChanged{Split: "a", Epoch: 2}) {
			t.Fatalf("next tenancy: %v", got)
		}
	})
}

// A DeclineRevoke of a live revocation is forced in one message: the
// revoke actor tells the split writer a forced RevocationChanged carrying the caller's
// ReplyTo and answers nothing itself, whatever ends the tenancy next (the
// root answers once the surrender's Lost is queued, 4 hops:
// docs/architecture.md, "Hops").
func TestDeclineIsAnsweredByTheRoot(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  []any
	}{
		{"forced", []any{wire.TenancyEnded{Split: "a", Epoch: 1, Reason: wire.EndRevoked},
			wire.HandBackResolved{Split: "a", Epoch: 1, Reason: wire.EndRevoked, Outcome: wire.HandBackLanded}}},
		{"completed", []any{wire.HandBackResolved{Split: "a", Epoch: 1, Reason: wire.EndCompleted, Outcome: wire.HandBackLanded},
			wire.TenancyEnded{Split: "a", Epoch: 1, Reason: wire.EndCompleted}}},
		{"fenced", []any{wire.TenancyEnded{Split: "a", Epoch: 1, Reason: wire.EndFenced}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rr := newRevokeRig(t)
				rr.send(follow("a", 1, false))
				rr.take()
				rr.send(messages.DeclineRevoke{Split: "a", Epoch: 1, ReplyTo: rr.root})
				if got := rr.take(); len(got) != 1 || got[0] != (wire.RevocationChanged{Split: "a", Epoch: 1, Forced: true, ReplyTo: rr.root}) {
					t.Fatalf("decline: %v, want one forced RevocationChanged carrying the ReplyTo", got)
				}
				rr.send(tc.end...)
				if got := rr.take(); len(got) != 0 {
					t.Fatalf("after the tenancy ended: %v, want nothing (the root answered)", got)
				}
			})
		})
	}
}
