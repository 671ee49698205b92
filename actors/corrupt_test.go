package actors

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// A split record whose owner is not an instance id (docs/protocol.md,
// "Parse failures") is Fatal naming its key. Before, the decoder accepted
// any string: on NATS the claimant's presence read failed on the invalid key
// "worker.bad owner" and the split stayed unclaimed, silently.
func TestInvalidOwnerInASplitRecordIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		// One lane: w1 holds one split, and nobody writes the other's record.
		w1 := r.start("w1", workertest.FinalPlan("a", "b"), func(c *coordination.Config) { c.MaxInFlight = 1 })
		r.until("w1 holds one", 10*time.Second, []*member{w1}, func() bool { return len(w1.held) == 1 })
		idle := coordination.SplitID("a")
		if _, held := w1.held[idle]; held {
			idle = "b"
		}
		key := protocol.SplitKey(idle)
		e, _, err := r.st.Get(context.Background(), store.Durable, key)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := protocol.DecodeSplit(key, e.Value, protocol.Fingerprint("job:v1"))
		if err != nil {
			t.Fatal(err)
		}
		rec.Owner, rec.Nonce = "bad owner", "n"
		workertest.Put(t, r.st, key, protocol.EncodeSplit(rec), uint64(e.Revision))
		for i := 0; i < 80 && err == nil; i++ {
			r.advance(125 * time.Millisecond)
			_, err = w1.c.Poll()
		}
		if coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), key) {
			t.Fatalf("Poll = %v, want a Fatal naming %s", err, key)
		}
		if cause := errors.Unwrap(err); cause == nil || !strings.Contains(cause.Error(), `field owner may only contain [A-Za-z0-9_-], got ' ' at byte 3 in "bad owner"`) {
			t.Fatalf("cause = %v, want the owner rule", cause)
		}
	})
}
