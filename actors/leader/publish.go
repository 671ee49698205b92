package leader

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

type (
	// publishDue is the publisher's queued evaluation.
	publishDue struct{}
	// holdEnded is the end of the startup hold (protocol.Grace.Hold),
	// delivered under the work lead.
	holdEnded struct{}
	// publishDone is one publish's result, delivered under the work lead.
	publishDone struct {
		written []assignCache
		lost    []assignCache // the cache entry each lost write was based on (rev 0: a Create)
		deleted []string
		failed  bool
		moved   int
		members string
	}
)

// publisher is the leader actor's assignment publisher (docs/protocol.md,
// "Assignment and the rebalance delay"), a component with its own state: at
// most one evaluation in flight, triggers coalesced into the next. Each
// method that starts work or applies its result takes the lead it runs
// under: nothing is written under a lead that ended, and a result delivered
// under one is not folded into the view. Written by the leader actor only.
type publisher struct {
	v          *worker.Env
	log        *slog.Logger
	dirty      bool         // an input of the assignment function changed
	seeded     bool         // splits appeared while this leader's run seeds: dirty at its next progress report
	soon       bool         // a publishDue is queued
	busy       bool         // a publish's goroutine is in flight
	retry      bool         // evaluate again at the next heartbeat
	lostStreak int          // consecutive publishes with a lost write
	announced  string       // member set of the last "assignment published" log
	hold       *clock.Timer // fires holdEnded when the startup hold ends; nil when none is armed
}

func newPublisher(v *worker.Env, log *slog.Logger) publisher {
	return publisher{v: v, log: log}
}

// changed records that an input of the assignment function changed.
func (p *publisher) changed() { p.dirty = true }

// seededMeanwhile records that a split appeared while the planner run
// seeds: it becomes an input change at the run's next progress report or
// its end (seedsPublishable), not before.
func (p *publisher) seededMeanwhile() { p.seeded = true }

// seedsPublishable makes the splits that appeared while the run seeded an
// input change.
func (p *publisher) seedsPublishable() {
	p.dirty = p.dirty || p.seeded
	p.seeded = false
}

// heartbeat makes the assignment dirty when a retry waits for the
// heartbeat or a startup grace pin of view ended by now.
func (p *publisher) heartbeat(now time.Time, view *fleetView) {
	if p.retry || view.grace.Due(now) {
		p.retry = false
		p.dirty = true
	}
}

// schedule queues one evaluation behind the messages already in the
// inbox, so an evaluation sees a whole burst of watch events rather than a
// half-applied view; triggers meanwhile coalesce into it.
func (p *publisher) schedule() {
	if p.dirty && !p.soon && !p.busy {
		p.soon = true
		p.v.Send(p.v.PIDs.Leader, publishDue{})
	}
}

// taken records that the queued publishDue arrived.
func (p *publisher) taken() { p.soon = false }

// publish computes the desired assignment from view (fingerprint is this
// worker's job) and writes the records that changed, under lead w, each
// carrying the cut requests takeCuts (called once the publish starts) has
// for its member, and the record of each member freshly asked a cut
// (docs/protocol.md, "Runtime split"). It refuses a lead that ended (or none), and does
// nothing while a publish is in flight or view has no member.
func (p *publisher) publish(w *lead, view *fleetView, fingerprint string, takeCuts func() cutRequests) {
	if w.ended() || view.live.Len() == 0 || p.busy {
		return
	}
	cuts := takeCuts()
	p.dirty, p.busy = false, true
	v, now := p.v, p.v.Clock.Now()
	in, laneless := view.assignInput(v.Config, fingerprint, v.ValueCap)
	in, holdEnd := view.grace.Hold(now, in, view.running)
	if !holdEnd.IsZero() && p.hold == nil {
		p.hold = w.after(v, holdEnd.Sub(now), v.PIDs.Leader, holdEnded{})
	}
	pinned := view.pinReported(view.grace.Pinned(now, in.Splits))
	cache, members, windows := view.snapshot()
	w.goFunc(v, v.PIDs.Leader, func(ctx context.Context) any {
		return publishAssignment(ctx, v, in, laneless, pinned, cache, members, windows, cuts, w.gen)
	})
}

// publishAssignment evaluates the assignment function and writes every
// member's record that changed at generation gen, or whose member cuts
// freshly asks a cut, an empty one for each member the unclaimed rule left
// laneless (none of in.Members), and deletes the records of members gone
// for good; it runs on a goroutine of the work lead.
func publishAssignment(ctx context.Context, v *worker.Env, in protocol.AssignInput, laneless []string, pinned map[coordination.SplitID]bool, cache map[string]assignCache, members wire.Members, windows map[string]bool, cuts cutRequests, gen uint64) publishDone {
	out := protocol.KeepPinned(in, protocol.Assign(in), pinned)
	for _, m := range laneless {
		out.Assigned[m] = []coordination.SplitID{}
	}
	var d publishDone
	prev := map[coordination.SplitID]string{}
	for inst, a := range cache {
		for _, id := range a.rec.Splits {
			prev[id] = inst
		}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for m := range out.Assigned {
			if !yield(m) {
				return
			}
		}
	})
	d.members = fmt.Sprint(names)
	for _, inst := range names {
		splits := out.Assigned[inst]
		for _, id := range splits {
			if p, ok := prev[id]; ok && p != inst {
				d.moved++
			}
		}
		old, cached := cache[inst]
		rc := recordCuts(cuts.by[inst], gen, splits, v.ValueCap)
		if cached && old.rec.Generation == gen && slices.Equal(old.rec.Splits, splits) && !(cuts.fresh[inst] && len(rc) > 0) {
			continue
		}
		rec := protocol.AssignmentRecord{Generation: gen, Splits: splits, Cuts: rc}
		b := protocol.EncodeAssignment(rec)
		if err := protocol.CheckAssignmentSize(inst, len(b), v.ValueCap); err != nil {
			v.FatalIf(err)
			d.failed = true
			return d
		}
		rev, ok, err := writeAssignment(ctx, v, inst, b, old, cached)
		switch judgeAssignWrite(ok, err) {
		case assignFailed:
			v.FatalIf(err)
			d.failed = true
		case assignWritten:
			d.written = append(d.written, assignCache{inst: inst, rec: rec, rev: uint64(rev)})
		case assignLost:
			d.lost = append(d.lost, assignCache{inst: inst, rev: old.rev})
		}
	}
	for inst, a := range cache {
		if !members.Has(inst) && !windows[inst] {
			oc, cancel := v.OpCtx(ctx)
			if ok, err := v.Store.Delete(oc, store.Durable, protocol.AssignKey(inst), store.Revision(a.rev)); judgeAssignWrite(ok, err) == assignWritten {
				d.deleted = append(d.deleted, inst)
			}
			cancel()
		}
	}
	return d
}

// writeAssignment writes member inst's record b: an Update of the cached
// record old, or a Create when none is cached.
func writeAssignment(ctx context.Context, v *worker.Env, inst string, b []byte, old assignCache, cached bool) (store.Revision, bool, error) {
	oc, cancel := v.OpCtx(ctx)
	defer cancel()
	if cached {
		return v.Store.Update(oc, store.Durable, protocol.AssignKey(inst), b, store.Revision(old.rev))
	}
	return v.Store.Create(oc, store.Durable, protocol.AssignKey(inst), b)
}

// holdEnded makes the assignment dirty once the startup hold armed under
// lead w is over, so the splits it kept back are placed at once rather than
// at the next heartbeat; a hold of an ended lead is ignored.
func (p *publisher) holdEnded(w *lead) {
	if w.ended() {
		return
	}
	p.hold = nil
	p.dirty = true
}

// published takes the result m of the publish started under lead w: the
// publish is done whatever w's fate, and its writes are folded into view's
// cache only while w lasts. It reports whether they were.
func (p *publisher) published(w *lead, m publishDone, view *fleetView) bool {
	p.busy = false
	if w.ended() {
		return false
	}
	for _, a := range m.written {
		p.log.Debug("assignment written", "key", protocol.AssignKey(a.inst), "splits", len(a.rec.Splits), "rev", a.rev)
		if old, ok := view.assigns[a.inst]; !ok || a.rev > old.rev {
			view.cacheAssign(a)
		}
	}
	// A lost write uncaches the entry it was based on, never a fresher one
	// the watch delivered meanwhile (that would make every later Create lose
	// again).
	for _, lost := range m.lost {
		if cur, ok := view.assigns[lost.inst]; ok && cur.rev == lost.rev {
			view.uncacheAssign(lost.inst)
		}
	}
	var retry publishRetry
	p.lostStreak, retry = judgeLosses(p.lostStreak, len(m.lost) > 0)
	p.dirty = p.dirty || retry == retryNow
	p.retry = p.retry || retry == retryHeartbeat || m.failed
	for _, inst := range m.deleted {
		view.uncacheAssign(inst)
	}
	if len(m.written) > 0 && (m.members != p.announced || m.moved > 0) {
		p.announced = m.members
		p.log.Info("assignment published", "members", view.live.Len(), "moved", m.moved, "generation", w.gen)
	}
	return true
}

// stopWork drops what the publisher kept for a work lead that ended: the
// startup hold's timer.
func (p *publisher) stopWork() {
	worker.StopTimer(p.hold)
	p.hold = nil
}
