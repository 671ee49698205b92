package actors

import (
	"context"
	"reflect"
	"sync"

	"github.com/anthdm/hollywood/actor"
)

// watchBacklog bounds the watch-fed messages of one worker that are in
// flight: taken from a store watcher, or fanned out by the watch actor, and
// not yet handled by the actor they went to. A split-record event costs four
// (the event, then its observation to commit, assign and leader), so this
// is about a thousand events: enough that the pumps never wait while the
// actors keep up, and a bound on the memory they hold when they do not.
const watchBacklog = 4096

// backlog is the credit of the watch hand-off (docs/protocol.md, "Watches
// and reconcile"). A watch's pump takes one credit per event before it sends
// it to the watch actor and waits while none is left, so a watcher whose
// consumer falls behind buffers in the store, whose own lag limit then
// breaks the watch (the watch actor re-watches and the new snapshot
// catches up) instead of the actors' inboxes growing with the event rate.
// The watch actor's publish adds one credit per recipient of each
// observation; backlogMiddleware returns one whenever an actor has handled a
// watch-fed message. Safe for concurrent use.
type backlog struct {
	mu    sync.Mutex
	n     int           // credits out
	freed chan struct{} // made by a waiting take, closed by the done that frees a credit
}

// take takes one credit for a pump, waiting while none is left; false when
// ctx ended first.
func (b *backlog) take(ctx context.Context) bool {
	b.mu.Lock()
	for b.n >= watchBacklog {
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
	b.n++
	b.mu.Unlock()
	return true
}

// add takes k credits without waiting: the watch actor must never block.
func (b *backlog) add(k int) {
	b.mu.Lock()
	b.n += k
	b.mu.Unlock()
}

// done returns one credit and wakes the waiting pumps once one is free.
func (b *backlog) done() {
	b.mu.Lock()
	b.n--
	if b.n < watchBacklog && b.freed != nil {
		close(b.freed)
		b.freed = nil
	}
	b.mu.Unlock()
}

// watchFed reports whether msg took a credit: a watch event a pump sent, or
// an observation the watch actor published (routing.go).
func watchFed(msg any) bool {
	if _, ok := msg.(watchEvent); ok {
		return true
	}
	return routeIndex[routeKey{roleWatch, reflect.TypeOf(msg)}] != nil
}

// backlogMiddleware returns a watch-fed message's credit once its actor has
// handled it, panic or not.
func backlogMiddleware(v *env) actor.MiddlewareFunc {
	return func(next actor.ReceiveFunc) actor.ReceiveFunc {
		return func(c *actor.Context) {
			if watchFed(c.Message()) {
				defer v.backlog.done()
			}
			next(c)
		}
	}
}
