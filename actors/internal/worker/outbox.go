package worker

import (
	"sync"

	"github.com/spate-go/coordination"
)

// Outbox is the one structure shared between the handle and the root actor,
// the driver's hand-off: the events Poll returns and the Waker. Spawn gives
// it to those two alone (it is not in Env). The root is its one writer of
// events; Poll is their only reader. Safe for concurrent use; the mutex is
// held only to copy in or out.
type Outbox struct {
	latch Latch // the worker's failure latch: no event after it fired; Take reports it

	mu      sync.Mutex
	events  []coordination.Event
	waker   *coordination.Waker
	closed  bool // departed or aborted: events are discarded
	started bool // Start happened: setWaker refuses
	// polled maps a split to the epoch of the Gained that Poll last handed
	// out for it; a Lost handed out removes it. Calls refer to that tenancy.
	polled map[coordination.SplitID]uint64
	// sessionLive and watchesLive are what Healthy reads, as the root last
	// published them (SetLive): the handle is not an actor, so it is not
	// told by message.
	sessionLive, watchesLive bool
}

// NewOutbox returns an empty outbox whose Take reports latch's failure once
// the events queued before it are drained, and which wakes the driver when
// latch fires.
func NewOutbox(latch Latch) *Outbox {
	o := &Outbox{latch: latch}
	latch.AfterFire(o.wake)
	return o
}

// SetLive publishes whether this worker holds a live session and whether
// both its watches are live; the root alone calls it, as the split writer's
// HealthChanged tells it (docs/architecture.md, "What `worker.Env` holds").
func (o *Outbox) SetLive(session, watches bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sessionLive, o.watchesLive = session, watches
}

// Live returns what SetLive last published.
func (o *Outbox) Live() (session, watches bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.sessionLive, o.watchesLive
}

// Push enqueues events and wakes the driver. Events after the latch fired
// are dropped (E8: the failure is reported after every earlier event). The
// latch is read under the mutex Take holds, so an event is either queued
// before Take reports the failure or dropped.
func (o *Outbox) Push(evs ...coordination.Event) {
	o.mu.Lock()
	if o.closed || o.latch.Halted() {
		o.mu.Unlock()
		return
	}
	o.events = append(o.events, evs...)
	o.mu.Unlock()
	o.wake()
}

// wake signals the Waker, if one is set.
func (o *Outbox) wake() {
	o.mu.Lock()
	w := o.waker
	o.mu.Unlock()
	if w != nil {
		w.Wake()
	}
}

// Take returns the queued events, or the latched failure once they are
// drained.
func (o *Outbox) Take() ([]coordination.Event, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.events) > 0 {
		evs := o.events
		o.events = nil
		for _, ev := range evs {
			switch e := ev.(type) {
			case coordination.Gained:
				if o.polled == nil {
					o.polled = map[coordination.SplitID]uint64{}
				}
				o.polled[e.Split.ID] = uint64(e.Epoch)
			case coordination.Lost:
				delete(o.polled, e.Split)
			}
		}
		return evs, nil
	}
	return nil, o.latch.Failure()
}

// PolledEpoch returns the epoch of the tenancy whose Gained Poll last handed
// out for id, or 0.
func (o *Outbox) PolledEpoch(id coordination.SplitID) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.polled[id]
}

// Start records that Start happened: later Wakers are refused.
func (o *Outbox) Start() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started = true
}

// SetWaker installs w unless Start has happened; it reports whether it did.
func (o *Outbox) SetWaker(w *coordination.Waker) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.started {
		return false
	}
	o.waker = w
	return true
}

// Close discards unpolled events and drops later ones.
func (o *Outbox) Close() {
	o.mu.Lock()
	o.closed = true
	o.events = nil
	o.mu.Unlock()
}
