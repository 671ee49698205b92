package worker

import (
	"testing"

	"github.com/spate-go/coordination/internal/protocol"
)

// TestJudgeSurrender: a surrender writes only on a runnable record naming
// its tenancy; a terminal one needs nothing; any other owner or epoch fences.
func TestJudgeSurrender(t *testing.T) {
	mine := protocol.SplitRecord{ID: "s", Epoch: 2, Owner: "me", Nonce: "n", Status: protocol.StatusRunnable}
	later, peer, done, quar := mine, mine, mine, mine
	later.Epoch = 3
	peer.Owner = "peer"
	done.Status = protocol.StatusCompleted
	quar.Status = protocol.StatusQuarantined
	for _, tt := range []struct {
		name string
		rec  protocol.SplitRecord
		want Surrender
	}{
		{"this tenancy's", mine, SurrenderWrite},
		{"a later epoch", later, SurrenderFenced},
		{"another owner", peer, SurrenderFenced},
		{"completed", done, SurrenderNothing},
		{"quarantined", quar, SurrenderNothing},
	} {
		if got := JudgeSurrender(tt.rec, "me", 2); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
