package splitwriter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/store/memstore"
)

// A split record naming an ended session is claimed whatever the order in
// which the split writer learns of the session's end, the new session, the
// presence key's changes, the record and the assignment (docs/protocol.md,
// "Claim candidates"): by its own instance as Reclaim once its new session
// is announced, by a peer as Expired once the presence shows the session
// gone. Nothing is claimed while this worker's session is ended. (Records
// of a member's ended session left unclaimed in CI were suspected to come
// from a view holding that session as live; these orders rule it out.)
func TestAnEndedSessionsRecordIsClaimedInEveryOrder(t *testing.T) {
	const old, next = "n", "n2" // the rig's first session and the next one
	type event struct {
		name  string
		apply func(r *claimerRig)
	}
	record := func(owner string) event {
		return event{"record", func(r *claimerRig) {
			rec := protocol.SplitRecord{ID: "a", Weight: 1, Status: protocol.StatusRunnable, Owner: owner, Nonce: old, Epoch: 1}
			r.sw.recordsChanged(nil, recordmsg.RecordsChanged{Records: []recordmsg.RecordChanged{{Split: "a", Record: rec, Rev: 5}}})
		}}
	}
	presence := func(inst, nonce string) event {
		return event{"presence " + inst + "=" + nonce, func(r *claimerRig) {
			r.presence(inst, nonce)
			r.sw.claims.step(nil)
		}}
	}
	assigned := event{"assignment", func(r *claimerRig) {
		r.sw.claims.assignment([]coordination.SplitID{"a"})
		r.sw.followAll()
		r.sw.claims.step(nil)
	}}
	ended := event{"session ended", func(r *claimerRig) { r.sw.sessionChanged(nil, wire.SessionChanged{}) }}
	started := event{"session started", func(r *claimerRig) { r.sw.sessionChanged(nil, wire.SessionChanged{Live: true, Nonce: next}) }}
	tests := []struct {
		name   string
		events []event // applied in every order that keeps each chain's order
		chains [][]int // indexes into events that the lease or the store orders
		want   protocol.ClaimKind
	}{
		{name: "own record, presence expired then announced", want: protocol.KindReclaim,
			events: []event{ended, started, presence("me", ""), presence("me", next), record("me"), assigned},
			chains: [][]int{{0, 1}, {2, 3}}},
		{name: "own record, presence taken over", want: protocol.KindReclaim,
			events: []event{ended, started, presence("me", next), record("me"), assigned},
			chains: [][]int{{0, 1}}},
		{name: "a peer's record, its presence expired then announced", want: protocol.KindExpired,
			events: []event{presence("w2", ""), presence("w2", next), record("w2"), assigned},
			chains: [][]int{{0, 1}}},
		{name: "a peer's record, its presence taken over", want: protocol.KindExpired,
			events: []event{presence("w2", next), record("w2"), assigned}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			for order := range permutations(len(tt.events)) {
				if !keepsChains(order, tt.chains) {
					continue
				}
				n++
				r := newClaimerRig(t, 4)
				ctx, cancel := context.WithCancel(context.Background())
				cancel() // the rig's actor sends nothing to its peers
				r.sw.v.Ctx = ctx
				r.presence("me", old)
				r.presence("w2", old)
				var names []string
				for _, i := range order {
					ev := tt.events[i]
					names = append(names, ev.name)
					ev.apply(r)
					for _, op := range r.asked { // a claim of the record as it was (the old session's leftover): its store failed
						if !r.sw.claims.session {
							t.Fatalf("order %v: asked %T while the session is ended", names, op)
						}
						r.sw.claims.abandoned(op.target(), 5, true)
					}
					r.asked = nil
				}
				r.sw.claims.heartbeat()
				r.sw.claims.step(nil)
				if got := claimsAsked(r); got != fmt.Sprintf("claim a %s", tt.want) {
					t.Fatalf("order %s: asked %q, want the %s claim of a", strings.Join(names, ", "), got, tt.want)
				}
			}
			if n == 0 {
				t.Fatal("no order ran")
			}
		})
	}
}

// claimsAsked describes the writes r's claimer asked for since the last
// call: "claim <id> <kind>" each, or "return <id>".
func claimsAsked(r *claimerRig) string {
	var got []string
	for _, op := range r.asked {
		switch op := op.(type) {
		case claimOp:
			got = append(got, fmt.Sprintf("claim %s %s", op.claim.Candidate.ID, op.claim.Candidate.Kind))
		case leftoverOp:
			got = append(got, "return "+string(op.leftover.Split))
		}
	}
	r.asked = nil
	return strings.Join(got, "; ")
}

// permutations yields every order of 0..n-1.
func permutations(n int) func(yield func([]int) bool) {
	return func(yield func([]int) bool) {
		p := make([]int, n)
		for i := range p {
			p[i] = i
		}
		var rec func(k int) bool
		rec = func(k int) bool {
			if k == n {
				return yield(append([]int(nil), p...))
			}
			for i := k; i < n; i++ {
				p[k], p[i] = p[i], p[k]
				if !rec(k + 1) {
					return false
				}
				p[k], p[i] = p[i], p[k]
			}
			return true
		}
		rec(0)
	}
}

// keepsChains reports whether order keeps the events of each chain in the
// chain's order.
func keepsChains(order []int, chains [][]int) bool {
	pos := make([]int, len(order))
	for at, i := range order {
		pos[i] = at
	}
	for _, c := range chains {
		for k := 1; k < len(c); k++ {
			if pos[c[k-1]] > pos[c[k]] {
				return false
			}
		}
	}
	return true
}

// A claim whose session ends while it is in flight begins no tenancy
// (docs/protocol.md, "Claim protocol", step 4): no tenancy starts under the
// ended session's nonce. Nothing ran under the claim, so its record is a
// leftover of this worker: claimed again under the new session, one epoch
// up and with no attempt charged, whether that session was announced
// before the claim returned or after; handed back if the split is no
// longer assigned here. (The tenancy used to begin with the ended
// session's nonce, to be fenced about a lease later by a claim charged an
// attempt.)
func TestAClaimThatOutlivesItsSessionBeginsNoTenancy(t *testing.T) {
	ended, renewed := wire.SessionChanged{}, wire.SessionChanged{Live: true, Nonce: "n2"}
	tests := []struct {
		name          string
		during, after []any // sent while the claim is in flight, and after it returned
		wantWon       []string
		wantOwner     string // of the final record, which has epoch wantEpoch, no attempt charged
		wantEpoch     uint64
	}{
		{name: "the new session announced while it is in flight", during: []any{ended, renewed},
			wantWon: []string{"a epoch 2"}, wantOwner: "w1", wantEpoch: 2},
		{name: "the new session announced after it returned", during: []any{ended}, after: []any{renewed},
			wantWon: []string{"a epoch 2"}, wantOwner: "w1", wantEpoch: 2},
		{name: "no longer assigned here", wantOwner: "", wantEpoch: 1, during: []any{ended, renewed,
			assignmentOf("b")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, clk := workertest.NewEngine(t)
				st := &gatedUpdate{Store: memstore.New(1500*time.Millisecond, memstore.WithClock(clk)), key: protocol.SplitKey("a"), gate: make(chan struct{})}
				workertest.Put(t, st, protocol.SpecKey("a"), protocol.EncodeSpec(protocol.NewSpec(coordination.SplitSpec{ID: "a", Weight: 1}, 0, 1)), 0)
				fresh := protocol.SplitRecord{ID: "a", Weight: 1, Status: protocol.StatusRunnable}
				rev := workertest.Put(t, st, protocol.SplitKey("a"), protocol.EncodeSplit(fresh), 0)
				_, writer, _, sent := spawnLoneSplitWriterOn(t, e, clk, st)
				holdClaim(t, e, writer, st, fresh, rev, tt.during, tt.after)
				var won []string
				for _, m := range sent() {
					if r, ok := m.(wire.EventsRaised); ok {
						for _, ev := range r.Events {
							if g, ok := ev.(coordination.Gained); ok {
								won = append(won, fmt.Sprintf("%s epoch %d", g.Split.ID, g.Epoch))
							}
						}
					}
				}
				if !slices.Equal(won, tt.wantWon) {
					t.Fatalf("claims won %q, want %q (none under the ended session n; the record names the session)", won, tt.wantWon)
				}
				r, _ := readSplit(t, st, "a")
				if r.Owner != tt.wantOwner || r.Epoch != tt.wantEpoch || r.Attempts != 0 {
					t.Fatalf("record %+v, want owner %q at epoch %d, no attempt charged", r, tt.wantOwner, tt.wantEpoch)
				}
				if r.Owner != "" && r.Nonce != "n2" {
					t.Fatalf("record %+v, want the new session n2", r)
				}
			})
		})
	}
}
