package coordination

// Waker wakes a driver parked on [Waker.C]. It is a channel of capacity 1:
// [Waker.Wake] never blocks, a burst of wakes collapses into one pending wake,
// and a wake sent before the driver parks stays pending, so it is never lost.
// A Waker is safe for concurrent use; its zero value is not usable (use
// [NewWaker]).
type Waker struct {
	ch chan struct{} // capacity 1; never closed
}

// NewWaker returns a Waker with no wake pending.
func NewWaker() *Waker { return &Waker{ch: make(chan struct{}, 1)} }

// Wake makes one wake pending unless one already is. It never blocks.
func (w *Waker) Wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// C returns the channel a driver parks on; a receive consumes the pending wake.
func (w *Waker) C() <-chan struct{} { return w.ch }
