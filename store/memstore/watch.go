package memstore

import (
	"context"
	"strings"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// lagLimit is how many live events a watcher may leave undelivered; one more
// breaks the watch (the contract forbids dropping events silently).
const lagLimit = 4096

// Watch delivers one Put per live key under prefix (plain string prefix),
// then exactly one SnapshotDone, then every later Put and Delete under prefix,
// with no gap: the snapshot and the registration of the tail happen under the
// store's lock. Expired entries are deleted, and their Deletes published to
// older watches, before the snapshot is taken, so the snapshot holds only
// live keys.
//
// The snapshot is buffered whatever its size; on top of it the watcher
// buffers up to 4096 undelivered live events, and one more breaks the watch
// with Retryable "watch lagged by more than 4096 events; re-watch". The watch
// ends with Err nil when ctx is done, [store.Watcher.Stop] is called or the
// store is closed. Watch itself fails only with Retryable for a done ctx and
// Fatal "store is closed"; it does not block.
func (s *Store) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.beginLocked(ctx, "watch", ks, prefix); err != nil {
		return nil, err
	}
	snap := s.listLocked(ks, prefix)
	w := &watcher{
		s:      s,
		ks:     ks,
		prefix: prefix,
		ch:     make(chan store.WatchEvent, len(snap)+1+lagLimit),
		snapN:  len(snap) + 1,
	}
	for _, e := range snap {
		w.ch <- store.WatchEvent{Kind: store.Put, Entry: e}
	}
	w.ch <- store.WatchEvent{Kind: store.SnapshotDone}
	w.sent = w.snapN
	s.watchers[w] = struct{}{}
	w.stopCtx = context.AfterFunc(ctx, w.Stop)
	return w, nil
}

// publishLocked sends ev, a change in keyspace ks, to every watcher of ks
// whose prefix matches, each with its own copy of the value.
func (s *Store) publishLocked(ks store.Keyspace, ev store.WatchEvent) {
	for w := range s.watchers {
		if s.space(w.ks) != s.space(ks) || !strings.HasPrefix(ev.Entry.Key, w.prefix) {
			continue
		}
		out := ev
		if ev.Kind == store.Put {
			out.Entry.Value = clone(ev.Entry.Value)
		}
		w.sendLocked(out)
	}
}

// watcher is one running watch of a [Store]. All its fields but the
// immutable ones are guarded by s.mu.
type watcher struct {
	s      *Store
	ks     store.Keyspace
	prefix string
	// ch carries the events. Its capacity is the snapshot (snapN events) plus
	// lagLimit, so a send under s.mu never blocks; it is closed once, under
	// s.mu, by endLocked.
	ch      chan store.WatchEvent
	snapN   int         // snapshot events, SnapshotDone included
	sent    int         // events sent on ch so far
	ended   bool        // ch is closed
	err     error       // why the watch ended; nil unless it broke
	stopCtx func() bool // unregisters the context callback
}

// Events returns the channel of the watch's events; it is closed when the
// watch ends.
func (w *watcher) Events() <-chan store.WatchEvent { return w.ch }

// Err returns nil while the watch runs and after it was stopped, its context
// ended or its store was closed; after it broke, the Retryable error saying
// why.
func (w *watcher) Err() error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.err
}

// Stop ends the watch and closes Events; events already buffered stay
// readable. It may be called more than once and from any goroutine.
func (w *watcher) Stop() {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.endLocked(nil)
}

// sendLocked buffers ev, or breaks the watch if that would leave more than
// lagLimit live events undelivered.
func (w *watcher) sendLocked(ev store.WatchEvent) {
	delivered := w.sent - len(w.ch)
	snapPending := max(w.snapN-delivered, 0)
	if len(w.ch)-snapPending >= lagLimit {
		w.endLocked(coordination.Errorf(coordination.Retryable,
			"watch lagged by more than %d events; re-watch", lagLimit))
		return
	}
	w.ch <- ev
	w.sent++
}

// endLocked ends the watch with err (nil for a clean end). Later calls do
// nothing.
func (w *watcher) endLocked(err error) {
	if w.ended {
		return
	}
	w.ended = true
	w.err = err
	close(w.ch)
	delete(w.s.watchers, w)
	if w.stopCtx != nil {
		w.stopCtx()
	}
}
