package actors

import (
	"context"
	"fmt"
	"slices"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
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

// publisher is the leader actor's assignment publisher part
// (docs/protocol.md, "Assignment and the rebalance delay"): at most one
// evaluation in flight, triggers coalesced into the next. Written by the
// leader actor only.
type publisher struct {
	dirty      bool         // an input of the assignment function changed
	seeded     bool         // splits appeared while this leader's run seeds: dirty at its next progress report
	soon       bool         // a publishDue is queued
	busy       bool         // a publish's goroutine is in flight
	retry      bool         // evaluate again at the next heartbeat
	lostStreak int          // consecutive publishes with a lost write
	announced  string       // member set of the last "assignment published" log
	hold       *clock.Timer // fires holdEnded when the startup hold ends; nil when none is armed
}

// schedulePublish queues one evaluation behind the messages already in the
// inbox, so an evaluation sees a whole burst of watch events rather than a
// half-applied view; triggers meanwhile coalesce into it.
func (l *leaderActor) schedulePublish(c *actor.Context) {
	if p := &l.pub; p.dirty && !p.soon && !p.busy {
		p.soon = true
		l.v.send(c.PID(), publishDue{})
	}
}

// publish computes the desired assignment and writes the records that
// changed, under the work lead.
func (l *leaderActor) publish(c *actor.Context) {
	w := l.el.working()
	if w == nil || !l.phase.live || !l.el.hasPlan || len(l.view.members) == 0 || l.pub.busy {
		return
	}
	l.pub.dirty, l.pub.busy = false, true
	now := l.v.clk.Now()
	in, holdEnd := l.view.grace.Hold(now, l.view.assignInput(l.v.cfg, l.fingerprint, l.v.cap), l.view.running)
	if !holdEnd.IsZero() && l.pub.hold == nil {
		l.pub.hold = w.after(l.v, holdEnd.Sub(now), c.PID(), holdEnded{})
	}
	pinned := l.view.grace.Pinned(now, in.Splits)
	cache, members, windows := l.view.snapshot()
	v := l.v
	w.goFunc(v, c.PID(), func(ctx context.Context) any {
		return publishAssignment(ctx, v, in, pinned, cache, members, windows, w.gen)
	})
}

// publishAssignment evaluates the assignment function and writes every
// member's record that changed at generation gen, and deletes the records of
// members gone for good; it runs on a goroutine of the work lead.
func publishAssignment(ctx context.Context, v *env, in protocol.AssignInput, pinned map[coordination.SplitID]bool, cache map[string]assignCache, members, windows map[string]bool, gen uint64) publishDone {
	out := protocol.KeepPinned(in, protocol.Assign(in), pinned)
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
		if cached && old.rec.Generation == gen && slices.Equal(old.rec.Splits, splits) {
			continue
		}
		rec := protocol.AssignmentRecord{Generation: gen, Splits: splits}
		b := protocol.EncodeAssignment(rec)
		if err := protocol.CheckAssignmentSize(inst, len(b), v.cap); err != nil {
			v.fatalIf(err)
			d.failed = true
			return d
		}
		rev, ok, err := writeAssignment(ctx, v, inst, b, old, cached)
		switch judgeAssignWrite(ok, err) {
		case assignFailed:
			v.fatalIf(err)
			d.failed = true
		case assignWritten:
			d.written = append(d.written, assignCache{inst: inst, rec: rec, rev: uint64(rev)})
		case assignLost:
			d.lost = append(d.lost, assignCache{inst: inst, rev: old.rev})
		}
	}
	for inst, a := range cache {
		if !members[inst] && !windows[inst] {
			oc, cancel := v.opCtx(ctx)
			if ok, err := v.st.Delete(oc, store.Durable, protocol.AssignKey(inst), store.Revision(a.rev)); judgeAssignWrite(ok, err) == assignWritten {
				d.deleted = append(d.deleted, inst)
			}
			cancel()
		}
	}
	return d
}

// writeAssignment writes member inst's record b: an Update of the cached
// record old, or a Create when none is cached.
func writeAssignment(ctx context.Context, v *env, inst string, b []byte, old assignCache, cached bool) (store.Revision, bool, error) {
	oc, cancel := v.opCtx(ctx)
	defer cancel()
	if cached {
		return v.st.Update(oc, store.Durable, protocol.AssignKey(inst), b, store.Revision(old.rev))
	}
	return v.st.Create(oc, store.Durable, protocol.AssignKey(inst), b)
}

// holdEnded evaluates the assignment once the startup hold is over, so the
// splits it kept back are placed at once rather than at the next heartbeat.
func (l *leaderActor) holdEnded(c *actor.Context) {
	l.pub.hold = nil
	l.pub.dirty = true
	l.tick(c)
}

// published folds a publish's result into the cache; its lead still lasts.
func (l *leaderActor) published(c *actor.Context, m publishDone) {
	f := &l.view
	for _, w := range m.written {
		l.log.Debug("assignment written", "key", protocol.AssignKey(w.inst), "splits", len(w.rec.Splits), "rev", w.rev)
		if old, ok := f.assigns[w.inst]; !ok || w.rev > old.rev {
			f.cacheAssign(w)
		}
	}
	// A lost write uncaches the entry it was based on, never a fresher one
	// the watch delivered meanwhile (that would make every later Create lose
	// again).
	for _, lost := range m.lost {
		if cur, ok := f.assigns[lost.inst]; ok && cur.rev == lost.rev {
			f.uncacheAssign(lost.inst)
		}
	}
	var retry publishRetry
	l.pub.lostStreak, retry = judgeLosses(l.pub.lostStreak, len(m.lost) > 0)
	l.pub.dirty = l.pub.dirty || retry == retryNow
	l.pub.retry = l.pub.retry || retry == retryHeartbeat || m.failed
	for _, inst := range m.deleted {
		f.uncacheAssign(inst)
	}
	if len(m.written) > 0 && (m.members != l.pub.announced || m.moved > 0) {
		l.pub.announced = m.members
		l.log.Info("assignment published", "members", len(f.members), "moved", m.moved, "generation", l.el.term.lead.gen)
	}
	l.schedulePublish(c)
}
