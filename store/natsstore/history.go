package natsstore

import (
	"context"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// WatchHistory delivers every revision the bucket of ks still keeps of the
// keys under prefix (plain string prefix), oldest first in revision order,
// puts and deletes alike (an expiry arrives as a Delete), then one
// SnapshotDone, then every later write as it lands, each revision once.
// Unlike Watch it keeps superseded revisions: how many the past part holds
// per key is the bucket's history depth (Config.History when this store
// created it; the lease bucket keeps one). Revisions of one bucket are its
// stream sequence, so they order writes across keys too. It is meant for
// audits (coordctl audit), not for coordinators.
//
// The watch ends with Err nil when ctx is done, Stop is called or the store
// is closed; it breaks with Retryable when the NATS client ends its
// subscription. Delivery is paced by the reader: the server holds back
// what the reader has not taken. It connects first if needed; errors are
// those of Watch.
func (s *Store) WatchHistory(ctx context.Context, ks store.Keyspace, prefix string) (w store.Watcher, err error) {
	err = s.resend(ctx, func() error {
		b, _, err := s.bucketConn(ctx, ks)
		if err != nil {
			return err
		}
		wctx, cancel := context.WithCancel(ctx)
		kw, err := b.kv.Watch(wctx, subjectFilter(prefix), jetstream.IncludeHistory())
		if err != nil {
			cancel()
			return s.watchErr(ctx, b.kv.Bucket(), err)
		}
		h := &historyWatcher{
			events: make(chan store.WatchEvent),
			stop:   make(chan struct{}),
			done:   make(chan struct{}),
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			_ = kw.Stop()
			cancel()
			return errClosed()
		}
		s.wg.Go(func() {
			defer close(h.done)
			defer cancel()
			defer func() { _ = kw.Stop() }()
			err := h.run(wctx, s.done, kw, prefix, b.kv.Bucket())
			h.mu.Lock()
			h.err = err
			h.mu.Unlock()
			close(h.events)
		})
		w = h
		return nil
	})
	return w, err
}

// historyWatcher is one running WatchHistory. Its goroutine owns the client
// watcher; events is unbuffered and closed by that goroutine when the watch
// ends, after err is set.
type historyWatcher struct {
	events   chan store.WatchEvent
	stop     chan struct{} // closed by Stop
	done     chan struct{} // closed when the goroutine returns
	stopOnce sync.Once

	mu  sync.Mutex
	err error
}

// run translates the client's entries until the watch ends; it returns nil
// when the owner ended it, else the Retryable reason it broke.
func (h *historyWatcher) run(ctx context.Context, closed <-chan struct{}, kw jetstream.KeyWatcher, prefix, bucket string) error {
	for {
		var e jetstream.KeyValueEntry
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case <-h.stop:
			return nil
		case <-closed:
			return nil
		case e, ok = <-kw.Updates():
		}
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return coordination.Errorf(coordination.Retryable, "natsstore: history watch of bucket %s was ended by the NATS client (connection closed or consumer lost); watch again", bucket)
		}
		var ev store.WatchEvent
		switch {
		case e == nil: // end of the kept revisions
			ev = store.WatchEvent{Kind: store.SnapshotDone}
		case !strings.HasPrefix(e.Key(), prefix):
			continue
		case e.Operation() == jetstream.KeyValuePut:
			ev = store.WatchEvent{Kind: store.Put, Entry: entry(e)}
		default:
			ev = store.WatchEvent{Kind: store.Delete, Entry: store.Entry{Key: e.Key(), Revision: store.Revision(e.Revision())}}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-h.stop:
			return nil
		case <-closed:
			return nil
		case h.events <- ev:
		}
	}
}

// Events returns the watch's events; the channel is closed when the watch
// ends.
func (h *historyWatcher) Events() <-chan store.WatchEvent { return h.events }

// Err returns nil while the watch runs and after it was stopped, else the
// Retryable reason it broke.
func (h *historyWatcher) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Stop ends the watch and waits until Events is closed. It may be called
// more than once and from any goroutine.
func (h *historyWatcher) Stop() {
	h.stopOnce.Do(func() { close(h.stop) })
	<-h.done
}
