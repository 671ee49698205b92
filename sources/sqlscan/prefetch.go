package sqlscan

import "context"

// prefetch is a batch statement that runs on a goroutine of its own while
// the lane handles the batch before it (readLane). Its owner ends it with
// exactly one call of wait or stop.
type prefetch struct {
	cancel context.CancelFunc
	done   chan struct{} // closed by the goroutine once b and err are set
	b      Batch
	err    error
}

// prefetch starts fetching sp.
func (r *reader) prefetch(ctx context.Context, sp span) *prefetch {
	ctx, cancel := context.WithCancel(ctx)
	p := &prefetch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.b, p.err = r.fetch(ctx, sp)
	}()
	return p
}

// wait returns the batch the statement read, once it has.
func (p *prefetch) wait() (Batch, error) {
	<-p.done
	p.cancel()
	return p.b, p.err
}

// stop cancels the statement and waits for its goroutine to end. A nil p
// is a no-op.
func (p *prefetch) stop() {
	if p == nil {
		return
	}
	p.cancel()
	<-p.done
}
