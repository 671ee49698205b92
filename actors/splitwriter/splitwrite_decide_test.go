package splitwriter

import (
	"testing"

	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"pgregory.net/rapid"
)

func TestClassifySplitConflict(t *testing.T) {
	base := protocol.SplitRecord{ID: "s", Epoch: 2, Owner: "me", Nonce: "n", Status: protocol.StatusRunnable}
	intended := base.HandBack(7)
	otherSession := base
	otherSession.Nonce = "x"
	higher := base.Claim("peer", "p", 3, false, 0)
	done := base.Complete(0)
	tests := []struct {
		name  string
		found bool
		got   protocol.SplitRecord
		want  worker.ConflictClass
	}{
		{"absent is a fence", false, protocol.SplitRecord{}, worker.ConflictFenced},
		{"the intended write landed", true, base.HandBack(9), worker.ConflictLanded},
		{"own earlier write: adopt", true, base, worker.ConflictAdopt},
		{"another session of this instance", true, otherSession, worker.ConflictFenced},
		{"a later claim", true, higher, worker.ConflictFenced},
		{"terminal", true, done, worker.ConflictFenced},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classifySplitConflict("me", "n", 2, intended, tt.found, tt.got); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMovedAway(t *testing.T) {
	held := worker.Tenancy{Epoch: 2, Nonce: "n"}
	mine := protocol.SplitRecord{Epoch: 2, Owner: "me", Nonce: "n"}
	tests := []struct {
		name string
		rec  protocol.SplitRecord
		want bool
	}{
		{"still ours", mine, false},
		{"completed by us", mine.Complete(0), false},
		{"a later epoch", mine.Claim("peer", "p", 3, true, 0), true},
		{"another session at our epoch", protocol.SplitRecord{Epoch: 2, Owner: "me", Nonce: "x"}, true},
		{"handed back at our epoch", mine.HandBack(0), true},
		{"an older epoch (stale)", protocol.SplitRecord{Epoch: 1, Owner: "peer", Nonce: "p"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := movedAway(&tt.rec, "me", held); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestVerdict(t *testing.T) {
	c := protocol.SplitRecord{Status: protocol.StatusCompleted}
	q := protocol.SplitRecord{Status: protocol.StatusQuarantined}
	r := protocol.SplitRecord{Status: protocol.StatusRunnable}
	tests := []struct {
		name    string
		recs    []protocol.SplitRecord
		planned uint64
		ok      bool
		stalled bool
	}{
		{"empty final plan completes", nil, 0, true, false},
		{"all completed", []protocol.SplitRecord{c, c}, 2, true, false},
		{"fewer than planned", []protocol.SplitRecord{c}, 2, false, false},
		{"a runnable split", []protocol.SplitRecord{c, r}, 2, false, false},
		{"a quarantined split stalls", []protocol.SplitRecord{c, q}, 2, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stalled, _, _, ok := verdict(tt.recs, tt.planned)
			if ok != tt.ok || stalled != tt.stalled {
				t.Fatalf("got ok=%v stalled=%v", ok, stalled)
			}
		})
	}
}

// TestVerdictProperty: a verdict is AllComplete only when every listed
// split completed, and never with fewer than planned entries.
func TestVerdictProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 12).Draw(t, "n")
		planned := uint64(rapid.IntRange(0, 14).Draw(t, "planned"))
		recs := make([]protocol.SplitRecord, n)
		var c, q, other int
		for i := range recs {
			s := protocol.Status(rapid.IntRange(0, 2).Draw(t, "status"))
			recs[i].Status = s
			switch s {
			case protocol.StatusCompleted:
				c++
			case protocol.StatusQuarantined:
				q++
			default:
				other++
			}
		}
		stalled, gc, gq, ok := verdict(recs, planned)
		switch {
		case uint64(n) < planned || other > 0:
			if ok {
				t.Fatal("verdict without every planned split terminal")
			}
		case !ok:
			t.Fatal("no verdict although every split is terminal")
		case stalled != (q > 0) || gc != uint64(c) || gq != uint64(q):
			t.Fatalf("got stalled=%v %d/%d, want %d/%d", stalled, gc, gq, c, q)
		}
	})
}

func TestResolution(t *testing.T) {
	tests := []struct {
		in   worker.CASOutcome
		want wire.HandBackOutcome
	}{
		{worker.CASLanded, wire.HandBackLanded},
		{worker.CASFenced, wire.HandBackFenced},
		{worker.CASUnconfirmed, wire.HandBackUnconfirmed},
		{worker.CASFatal, wire.HandBackUnconfirmed},
	}
	for _, tt := range tests {
		if got := resolution(tt.in); got != tt.want {
			t.Errorf("resolution(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
