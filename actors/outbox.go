package actors

import (
	"sync"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
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
	// cells holds, per split, the latest tenancy the root started: its
	// progress record as the fence or the last commit left it. From its
	// Gained on, the handle is that record's only writer (commits run on the
	// caller's goroutine); the root marks the cell ended when the tenancy
	// ends.
	cells map[coordination.SplitID]*progressCell
}

// progressCell is one tenancy's progress record as this worker last wrote it.
type progressCell struct {
	epoch uint64
	prog  protocol.ProgressRecord
	rev   uint64
	ended bool
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

// begin records a tenancy the root started, with the progress record its
// fence left.
func (o *outbox) begin(id coordination.SplitID, epoch uint64, prog protocol.ProgressRecord, rev uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cells == nil {
		o.cells = map[coordination.SplitID]*progressCell{}
	}
	o.cells[id] = &progressCell{epoch: epoch, prog: prog, rev: rev}
}

// ended marks the tenancy (id, epoch) ended: calls for it are not held.
func (o *outbox) ended(id coordination.SplitID, epoch uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c := o.cells[id]; c != nil && c.epoch == epoch {
		c.ended = true
	}
}

// heldCell returns a copy of the progress cell of the polled tenancy of id,
// or false when that tenancy is not held (never polled, ended, or
// re-claimed with its Gained still unpolled).
func (o *outbox) heldCell(id coordination.SplitID) (progressCell, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.cells[id]
	if c == nil || c.ended || c.epoch != o.polled[id] {
		return progressCell{}, false
	}
	return *c, true
}

// advance records a progress write of tenancy (id, epoch) that landed at
// rev, unless a newer one is already recorded.
func (o *outbox) advance(id coordination.SplitID, epoch uint64, prog protocol.ProgressRecord, rev uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c := o.cells[id]; c != nil && c.epoch == epoch && rev > c.rev {
		c.prog, c.rev = prog, rev
	}
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
