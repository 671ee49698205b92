package worker

import (
	"context"
	"sync"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/internal/recordmsg"
)

// WatchBacklog bounds the watch-fed items of one worker that are in
// flight: events taken from a store watcher, and observations routed by
// the watch actor, not yet handled by the actor they went to. A message
// carrying a burst counts each of its items (credits). A split-record event
// costs three (the event, then its observation to splitwriter and
// leader), so this is about 1,300 events: enough that the pumps never
// wait while the actors keep up, and a bound on the memory they hold when
// they do not (plus the burst each pump holds while it waits).
const WatchBacklog = 4096

// Backlog is the credit of the watch hand-off (docs/protocol.md, "Watches
// and reconcile"). A watch's pump takes one credit per event before it sends
// a burst to the watch actor and waits while none is left, so a watcher
// whose consumer falls behind buffers in the store, whose own lag limit
// then breaks the watch (the watch actor re-watches and the new snapshot
// catches up) instead of the actors' inboxes growing with the event rate.
// The watch actor adds the credits of each observation per recipient
// (Observe); BacklogMiddleware returns them whenever an actor has handled
// a watch-fed message. Spawn makes one per worker and hands the pointer to
// every part in Env: flow control, not a fact any actor decides
// (docs/architecture.md, "What `worker.Env` holds"). The zero Backlog has
// no credit out. Safe for concurrent use.
type Backlog struct {
	mu    sync.Mutex
	n     int           // credits out
	freed chan struct{} // made by a waiting take, closed by the done that frees a credit
}

// Take takes k credits (at most watchBacklog) for a pump's burst, waiting
// until that many are left; false when ctx ended first.
func (b *Backlog) Take(ctx context.Context, k int) bool {
	b.mu.Lock()
	for b.n+k > WatchBacklog {
		if b.freed == nil {
			b.freed = make(chan struct{})
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return false
		}
		b.mu.Lock()
	}
	b.n += k
	b.mu.Unlock()
	return true
}

// Observe takes the credits of observation msg for each of n recipients
// without waiting (the watch actor must never block), before the watch
// actor sends it to them.
func (b *Backlog) Observe(msg any, n int) { b.add(n * credits(msg)) }

// add takes k credits without waiting.
func (b *Backlog) add(k int) {
	b.mu.Lock()
	b.n += k
	b.mu.Unlock()
}

// done returns k credits and wakes the waiting pumps once one is free.
func (b *Backlog) done(k int) {
	b.mu.Lock()
	b.n -= k
	if b.n < WatchBacklog && b.freed != nil {
		close(b.freed)
		b.freed = nil
	}
	b.mu.Unlock()
}

// credits returns the credits msg took: one per event of a pump's burst,
// one per record of a run of split record changes, one for any other
// observation the watch actor sends (actors/watch), and none for a
// message that is not watch-fed. Observe and BacklogMiddleware both count
// with it, so a credit taken is always returned.
func credits(msg any) int {
	switch m := msg.(type) {
	case eventBurst:
		return m.Events()
	case recordmsg.RecordsChanged:
		return len(m.Records)
	case wire.PresenceChanged,
		recordmsg.LeaderChanged, recordmsg.PlanChanged,
		recordmsg.AssignmentChanged, wire.WatchesChanged, wire.Reconciled:
		return 1
	}
	return 0
}

// eventBurst is a watch-fed message carrying a burst of watch events (the
// watch actor's own): it took one credit per event.
type eventBurst interface{ Events() int }

// BacklogMiddleware returns a watch-fed message's credit once its actor has
// handled it, panic or not.
func BacklogMiddleware(v *Env) actor.MiddlewareFunc {
	return func(next actor.ReceiveFunc) actor.ReceiveFunc {
		return func(c *actor.Context) {
			if k := credits(c.Message()); k > 0 {
				defer v.Backlog.done(k)
			}
			next(c)
		}
	}
}

// Pending is how many credits are out: watch-fed items not yet handled.
func (b *Backlog) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}
