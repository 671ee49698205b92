package commitwriter

import (
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
)

// cutAsked acts on one of the leader's cut requests addressed to this
// worker (docs/protocol.md, "Runtime split", "Who decides"): it emits
// coordination.CutRequested to the driver when judgeCutAsk lets it, by
// telling the root, the outbox's one writer, which hands it on only when the
// driver polled the tenancy's Gained (rootActor.cutRequested).
func (w *commitWriter) cutAsked(m worker.CutAsked) {
	cell := w.cells[m.Split]
	now := w.v.Clock.Now()
	if !judgeCutAsk(m, cell, w.v.Config.EffectiveCutInterval(), now) {
		return
	}
	cell.askedAt = now
	w.v.Log.Debug("cut requested", "split", m.Split, "epoch", m.Epoch, "keep_ppm", m.KeepPPM)
	w.v.Tell(wire.CutRequested{Event: coordination.CutRequested{Split: m.Split, Epoch: m.Epoch, Keep: float64(m.KeepPPM) / 1e6, Parts: int(max(m.Parts, 1))}}, w.v.PIDs.Root)
}

// judgeCutAsk decides whether request m is handed to the root now: only
// while the worker holds m.Split at m.Epoch (cell, nil when not held), with
// no cut of it in flight or unconfirmed, its next cut numbered m.Counter
// (from the durable record: a request whose cut was made is void), and at
// most once per half interval (interval 0: never) per tenancy, so a request
// the leader publishes again is not handed over twice, while the leader's
// next request of the split, an interval after its last by the leader's
// clock, is never refused for arriving a little early by this one's. Whether
// the driver polled the tenancy's Gained is the root's check, as the
// outbox's owner; a request it drops for that still counts here, so the
// driver sees the leader's next one.
func judgeCutAsk(m worker.CutAsked, cell *progressCell, interval time.Duration, now time.Time) bool {
	if cell == nil || cell.epoch != uint64(m.Epoch) || interval <= 0 {
		return false
	}
	if cell.cutting || cell.pendingIn(cell.prog) != nil {
		return false
	}
	next, ok := cell.prog.NextCut(nil, 1)
	if !ok || next.Counter != m.Counter {
		return false
	}
	return cell.askedAt.IsZero() || now.Sub(cell.askedAt) >= interval/2
}
