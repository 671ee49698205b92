package worker

import (
	"sync"

	"github.com/spate-go/coordination"
)

// Outbox is the one structure shared between the handle and the root actor:
// the events Poll returns, the latched failure and the Waker. The root is
// its writer of events, but for the commit writer's CutRequested (of a
// tenancy whose Gained Poll already handed out); Poll is its only reader. Safe for concurrent
// use; the mutex is held only to copy in or out.
type Outbox struct {
	mu      sync.Mutex
	events  []coordination.Event
	err     error // latched failure, first wins
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

// SetLive publishes whether this worker holds a live session and whether
// both its watches are live; the root alone calls it, as the lease and the
// watch tell it (docs/architecture.md, "The worker's environment").
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

// Push enqueues events and wakes the driver. Events after a latched failure
// are dropped (E8: the failure is reported after every earlier event).
func (o *Outbox) Push(evs ...coordination.Event) {
	o.mu.Lock()
	if o.closed || o.err != nil {
		o.mu.Unlock()
		return
	}
	o.events = append(o.events, evs...)
	w := o.waker
	o.mu.Unlock()
	if w != nil {
		w.Wake()
	}
}

// fail latches err unless a failure is already latched, and wakes.
func (o *Outbox) fail(err error) {
	o.mu.Lock()
	if o.err != nil {
		o.mu.Unlock()
		return
	}
	o.err = err
	w := o.waker
	o.mu.Unlock()
	if w != nil {
		w.Wake()
	}
}

// Failure returns the latched failure, or nil.
func (o *Outbox) Failure() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
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
	return nil, o.err
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
