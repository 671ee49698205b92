package actors

import (
	"testing"
	"testing/synctest"

	"github.com/spate-go/coordination/actors/internal/wire"
)

// The root publishes what Healthy reads (Outbox.SetLive) from the split
// writer's HealthChanged, each change at once.
func TestRootPublishesSessionAndWatchesForHealthy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rig := newRootRig(t)
		rig.start(t)
		e, v, out := rig.e, rig.v, rig.out
		type live struct{ session, watches bool }
		for _, step := range []struct {
			send any
			want live
		}{
			{wire.HealthChanged{Session: true}, live{true, false}},
			{wire.HealthChanged{Session: true, Watches: true}, live{true, true}},
			{wire.HealthChanged{Watches: true}, live{false, true}},
		} {
			e.Send(v.PIDs.Root, step.send)
			synctest.Wait()
			var got live
			got.session, got.watches = out.Live()
			if got != step.want {
				t.Fatalf("after %T%+v: published %+v, want %+v", step.send, step.send, got, step.want)
			}
		}
	})
}
