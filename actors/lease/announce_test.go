package lease

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// TestAnnounceRetryAfterALandedAttemptIsNoTwin: an announce whose write
// landed but reported an error is retried with the same nonce, and the
// retry takes its own value over; a third nonce there is a live twin.
func TestAnnounceRetryAfterALandedAttemptIsNoTwin(t *testing.T) {
	tests := []struct {
		name  string
		found string // the nonce on the presence key
		twin  bool
	}{
		{"the ended session's value", "ended", false},
		{"this announce's earlier attempt landed", "retry", false},
		{"another live worker", "other", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := memstore.New(30 * time.Second)
			v := workertest.NewEnv(t, st)
			key := protocol.WorkerKey(v.ID)
			if _, _, err := st.Create(context.Background(), store.Ephemeral, key, protocol.EncodePresence(protocol.PresenceRecord{Nonce: tt.found})); err != nil {
				t.Fatal(err)
			}
			_, err := announceSession(context.Background(), v, "retry", "ended")
			if tt.twin {
				if coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), "unique InstanceID") {
					t.Fatalf("err %v, want the twin Fatal", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("err %v", err)
			}
			e, _, _ := st.Get(context.Background(), store.Ephemeral, key)
			if p, _ := protocol.DecodePresence(key, e.Value); p.Nonce != "retry" {
				t.Fatalf("presence nonce %q after the takeover", p.Nonce)
			}
		})
	}
}
