package actors

import (
	"sync"

	"github.com/spate-go/coordination"
)

// outbox is the one structure shared between the handle and the root actor:
// the events Poll returns, the latched failure and the Waker. The root is
// its only writer of events; Poll is its only reader. Safe for concurrent
// use; the mutex is held only to copy in or out.
type outbox struct {
	mu      sync.Mutex
	events  []coordination.Event
	err     error // latched failure, first wins
	waker   *coordination.Waker
	closed  bool // departed or aborted: events are discarded
	started bool // Start happened: setWaker refuses
	// polled maps a split to the epoch of the Gained that Poll last handed
	// out for it; a Lost handed out removes it. Calls refer to that tenancy.
	polled map[coordination.SplitID]uint64
}

// push enqueues events and wakes the driver. Events after a latched failure
// are dropped (E8: the failure is reported after every earlier event).
func (o *outbox) push(evs ...coordination.Event) {
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
func (o *outbox) fail(err error) {
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

// failure returns the latched failure, or nil.
func (o *outbox) failure() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// take returns the queued events, or the latched failure once they are
// drained.
func (o *outbox) take() ([]coordination.Event, error) {
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

// polledEpoch returns the epoch of the tenancy whose Gained Poll last handed
// out for id, or 0.
func (o *outbox) polledEpoch(id coordination.SplitID) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.polled[id]
}

// start records that Start happened: later Wakers are refused.
func (o *outbox) start() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started = true
}

// setWaker installs w unless Start has happened; it reports whether it did.
func (o *outbox) setWaker(w *coordination.Waker) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.started {
		return false
	}
	o.waker = w
	return true
}

// close discards unpolled events and drops later ones.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.events = nil
	o.mu.Unlock()
}
