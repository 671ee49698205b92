package actors

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// ReportRemaining reaches the worker's presence: the next renewal carries
// the estimate of the held tenancy, and one naming another epoch is
// ignored (docs/protocol.md, "Runtime split").
func TestReportRemainingRidesOnThePresence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		m := r.start("w1", workertest.FinalPlan("a"))
		r.until("a gained", 10*time.Second, []*member{m}, func() bool { return len(m.held) == 1 })
		g := m.held["a"]
		m.c.ReportRemaining("a", g.Epoch, 500)
		m.c.ReportRemaining("a", g.Epoch+1, 900)
		m.c.ReportRemaining("b", g.Epoch, 900)
		want := []protocol.Estimate{{Split: "a", Epoch: uint64(g.Epoch), Remaining: 500}}
		var got protocol.PresenceRecord
		r.until("the estimate in the presence", 2*time.Second, []*member{m}, func() bool {
			en, ok, err := r.st.Get(context.Background(), store.Ephemeral, protocol.WorkerKey("w1"))
			if err != nil || !ok {
				t.Fatalf("presence: %v %v", ok, err)
			}
			if got, err = protocol.DecodePresence(protocol.WorkerKey("w1"), en.Value); err != nil {
				t.Fatal(err)
			}
			return got.Remaining != nil
		})
		if !slices.Equal(got.Remaining, want) {
			t.Fatalf("presence remaining %v, want %v", got.Remaining, want)
		}
		// The tenancy's end drops its estimate.
		if err := m.c.Release("a"); err != nil {
			t.Fatal(err)
		}
		r.until("the estimate gone with the tenancy", 2*time.Second, []*member{m}, func() bool {
			en, ok, err := r.st.Get(context.Background(), store.Ephemeral, protocol.WorkerKey("w1"))
			if err != nil || !ok {
				t.Fatalf("presence: %v %v", ok, err)
			}
			if got, err = protocol.DecodePresence(protocol.WorkerKey("w1"), en.Value); err != nil {
				t.Fatal(err)
			}
			return got.Remaining == nil
		})
	})
}
