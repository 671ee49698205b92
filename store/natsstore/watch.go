package natsstore

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// defaultWatchBuffer is how many events a watch holds for a slow consumer
// once its snapshot is complete; one more breaks the watch. During the
// initial replay the store instead stops reading (the server then paces
// delivery), so a snapshot of any size fits.
const defaultWatchBuffer = 1 << 16

// watchDeliveryBuffer is the capacity of a watch's Events channel: events
// the run goroutine hands over ahead of the consumer, so that a consumer
// that drains what is waiting (the watch actor takes up to 256 events per
// message) finds a burst rather than the one event an unbuffered hand-off
// holds. They count against the lag limit like the queue's (the snapshot
// is paced on the queue alone).
const watchDeliveryBuffer = 256

// watchSetupTimeout bounds the creation of a watch's consumer when the
// caller's context has no earlier deadline.
const watchSetupTimeout = 10 * time.Second

// watcher is one running watch. The run goroutine owns the queue and the
// client watcher; events (capacity min(watchDeliveryBuffer, limit)) is
// closed by run when the watch ends, after err is set.
type watcher struct {
	s      *Store
	conn   *conn
	b      kvBucket
	filter string // the subject filter of prefix
	ks     store.Keyspace
	prefix string
	bucket string
	limit  int

	// Set before the run goroutine starts, then owned by it: the client
	// watcher, the cancel func of its subscription, the reader of the
	// bucket's last sequence under filter, and what it read before the
	// consumer was created (see loop).
	kw     jetstream.KeyWatcher
	cancel context.CancelFunc
	last   func(context.Context) (uint64, error)
	floor  uint64

	events chan store.WatchEvent
	stop   chan struct{} // closed by Stop
	brk    chan struct{} // closed by breakWith, after brkErr is set
	done   chan struct{} // closed when run returns

	stopOnce sync.Once
	brkOnce  sync.Once
	brkErr   error

	mu  sync.Mutex
	err error
}

// Watch delivers one Put per live key under prefix (plain string prefix),
// then exactly one SnapshotDone, then live Put and Delete events (an
// explicit delete and an expiry both arrive as Delete with the marker's
// revision). The snapshot streams; it ends once it has caught up with the
// bucket's last message under the prefix, as the stream (its leader, on a
// replicated bucket) reports it (see snapshotEnd), and a delete made after
// Watch was called that the snapshot absorbs arrives as a Delete right
// after SnapshotDone. The watch ends with Err nil when ctx is done, Stop is
// called or the store is closed; it breaks with Retryable when the
// connection is lost, the client ends the subscription, or the consumer
// falls more than 65536 events behind after its snapshot. Creating the
// watch's consumer is bounded by ctx and by 10s.
func (s *Store) Watch(ctx context.Context, ks store.Keyspace, prefix string) (w store.Watcher, err error) {
	err = s.resend(ctx, func() (err error) {
		w, err = s.watch(ctx, ks, prefix, defaultWatchBuffer)
		return err
	})
	return w, err
}

// watch is Watch with a buffer limit (tests use small ones).
func (s *Store) watch(ctx context.Context, ks store.Keyspace, prefix string, limit int) (store.Watcher, error) {
	b, c, err := s.bucketConn(ctx, ks)
	if err != nil {
		return nil, err
	}
	losses := c.link.lossCount()
	w := &watcher{
		s:      s,
		conn:   c,
		b:      b,
		filter: subjectFilter(prefix),
		ks:     ks,
		prefix: prefix,
		bucket: b.kv.Bucket(),
		limit:  limit,
		events: make(chan store.WatchEvent, min(watchDeliveryBuffer, limit)),
		stop:   make(chan struct{}),
		brk:    make(chan struct{}),
		done:   make(chan struct{}),
	}
	w.last = func(ctx context.Context) (uint64, error) { return b.lastUnder(ctx, w.filter) }
	if w.floor, err = w.last(ctx); err != nil {
		return nil, s.watchErr(ctx, w.bucket, err)
	}
	if err := w.start(ctx); err != nil {
		return nil, s.watchErr(ctx, w.bucket, err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		w.end()
		return nil, errClosed()
	}
	s.watches[w] = struct{}{}
	s.wg.Go(func() { w.run(ctx) })
	s.mu.Unlock()
	// A loss between the consumer's creation and the registration above
	// found no watch to break: break it now (see connectionLost).
	if c.link.lossCount() != losses {
		w.breakWith(errConnLost())
	}
	return w, nil
}

// start creates the client watcher. Creating its consumer is bounded by
// watchSetupTimeout.
func (w *watcher) start(ctx context.Context) error {
	// The client ends its subscription when this context ends, so it lives
	// as long as the watch; the timer only bounds the setup.
	wctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(watchSetupTimeout, cancel)
	kw, err := w.b.kv.Watch(wctx, w.filter)
	if !timer.Stop() && err == nil {
		_ = kw.Stop()
		err = context.DeadlineExceeded
	}
	if err != nil {
		cancel()
		return err
	}
	w.kw, w.cancel = kw, cancel
	return nil
}

// end stops the client watcher.
func (w *watcher) end() {
	_ = w.kw.Stop()
	w.cancel()
}

// watchErr classifies a failure to start a watch or listing.
func (s *Store) watchErr(ctx context.Context, bucket string, err error) error {
	if s.isClosed() {
		return errClosed()
	}
	if ctx.Err() != nil {
		return s.ctxErr("watching bucket "+bucket, err)
	}
	if notSent(err) {
		return coordination.Errorf(coordination.Retryable, "natsstore: watching bucket %s: connection to NATS lost, request not sent (%w)", bucket, err)
	}
	return coordination.Errorf(coordination.Retryable, "natsstore: watching bucket %s: %w", bucket, err)
}

// subjectFilter returns the key filter for a plain string prefix: ">" when
// the prefix has no '.', else the prefix up to and including its last '.'
// followed by ">". A prefix whose leading tokens are not literal subject
// tokens falls back to ">"; the prefix itself is matched on every key.
func subjectFilter(prefix string) string {
	i := strings.LastIndexByte(prefix, '.')
	if i < 0 {
		return ">"
	}
	for _, tok := range strings.Split(prefix[:i], ".") {
		if tok == "" || strings.ContainsFunc(tok, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-/_=", r))
		}) {
			return ">"
		}
	}
	return prefix[:i+1] + ">"
}

// run moves events from the client's channel into the watch's queue and on
// to the consumer until the watch ends. The consumer learns the end before
// the client watcher is stopped: stopping it deletes its consumer on the
// server, which on a connection that buffers while reconnecting (one
// passed as Config.Conn) waits out the client's request timeout. Events
// still in the channel's buffer when the watch ends are dropped, like the
// queue's: nothing is delivered after the end.
func (w *watcher) run(ctx context.Context) {
	defer close(w.done)
	err := w.loop(ctx)
	w.s.mu.Lock()
	delete(w.s.watches, w)
	w.s.mu.Unlock()
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
	for drained := false; !drained; {
		select {
		case <-w.events: // the consumer may take it first: never block
		default:
			drained = true
		}
	}
	close(w.events)
	w.end()
}

// loop is run's body; it returns nil when the watch was ended by its
// owner, else the Retryable reason it broke.
//
// Everything the replay delivers before the snapshot's end (see
// snapshotEnd) is snapshot, live writes that raced the watch's start
// included. A put there is a snapshot Put; a delete cannot be (the
// snapshot holds no deletes), so one above the floor, made after Watch was
// called, is held back and delivered right after SnapshotDone unless a
// later put of its key arrives first. A delete at or below the floor
// predates the watch and is skipped, unless the replay delivered a put of
// its key before it: a consumer served by a replica behind the stream's
// leader (a replicated bucket under load) can replay a key's older put and
// then its delete, and skipping that delete would keep a deleted key in
// the snapshot. Such a delete is held back like a racing one. With nothing
// under the filter at the floor, the snapshot is empty and ends at once.
func (w *watcher) loop(ctx context.Context) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	end := newSnapshotEnd(w.last, w.floor)
	snapshot := w.floor > 0
	var queue []store.WatchEvent
	if !snapshot {
		queue = append(queue, store.WatchEvent{Kind: store.SnapshotDone})
	}
	updates := w.kw.Updates()
	racing := map[string]store.Revision{} // held-back deletes, by key
	shown := map[string]struct{}{}        // keys the snapshot delivered a put of
	for {
		// Hand over what the consumer's buffer takes without a select of
		// every case: one select per event received, not two.
		for sent := true; sent && len(queue) > 0; {
			select {
			case w.events <- queue[0]:
				queue[0] = store.WatchEvent{}
				queue = queue[1:]
			default:
				sent = false
			}
		}
		var out chan<- store.WatchEvent
		var next store.WatchEvent
		if len(queue) > 0 {
			out, next = w.events, queue[0]
		}
		in := updates
		if snapshot && len(queue) >= w.limit {
			in = nil // pace the snapshot instead of breaking (the queue's send wakes the loop)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-w.stop:
			return nil
		case <-w.s.done:
			return nil
		case <-w.brk:
			return w.brkErr
		case out <- next:
			queue[0] = store.WatchEvent{}
			queue = queue[1:]
		case r := <-end.answers:
			complete, err := end.settle(rctx, r)
			if err != nil {
				if w.ended(ctx) {
					return nil
				}
				if notSent(err) {
					return coordination.Errorf(coordination.Retryable, "natsstore: watch of bucket %s: connection to NATS lost while reading the bucket's last sequence to end the snapshot, request not sent (%v); re-watch", w.bucket, err)
				}
				return coordination.Errorf(coordination.Retryable, "natsstore: watch of bucket %s: reading the bucket's last sequence to end the snapshot: %v; re-watch", w.bucket, err)
			}
			if complete {
				snapshot = false
				queue = append(queue, store.WatchEvent{Kind: store.SnapshotDone})
				queue = appendDeletes(queue, racing)
				racing, shown = nil, nil
			}
		case e, ok := <-in:
			if !ok {
				if w.ended(ctx) {
					return nil
				}
				return coordination.Errorf(coordination.Retryable, "natsstore: watch of bucket %s was ended by the NATS client (connection closed or consumer lost); re-watch", w.bucket)
			}
			if e == nil { // the client's end of the initial values: a hint only
				if snapshot {
					end.read(rctx)
				}
				continue
			}
			if snapshot {
				end.saw(rctx, e.Revision())
			}
			if !strings.HasPrefix(e.Key(), w.prefix) {
				continue
			}
			put := e.Operation() == jetstream.KeyValuePut
			if snapshot && !put {
				if _, ok := shown[e.Key()]; ok || e.Revision() > w.floor {
					racing[e.Key()] = store.Revision(e.Revision())
				}
				continue
			}
			if snapshot {
				delete(racing, e.Key())
				shown[e.Key()] = struct{}{}
			}
			if !snapshot && len(queue)+len(w.events) >= w.limit {
				return coordination.Errorf(coordination.Retryable, "natsstore: watch of bucket %s lagged by more than %d events; re-watch", w.bucket, w.limit)
			}
			ev := store.WatchEvent{Kind: store.Put, Entry: entry(e)}
			if put {
				w.s.puts.note(w.ks, e.Key(), ev.Entry.Revision)
			} else {
				ev = store.WatchEvent{Kind: store.Delete, Entry: store.Entry{Key: e.Key(), Revision: store.Revision(e.Revision())}}
			}
			queue = append(queue, ev)
		}
	}
}

// appendDeletes appends a Delete for each key of dels at its revision, in
// revision order.
func appendDeletes(queue []store.WatchEvent, dels map[string]store.Revision) []store.WatchEvent {
	start := len(queue)
	for k, rev := range dels {
		queue = append(queue, store.WatchEvent{Kind: store.Delete, Entry: store.Entry{Key: k, Revision: rev}})
	}
	slices.SortFunc(queue[start:], func(a, b store.WatchEvent) int { return cmp.Compare(a.Entry.Revision, b.Entry.Revision) })
	return queue
}

// ended reports whether the watch's owner ended it (context, Stop or
// Close), as opposed to a break.
func (w *watcher) ended(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	case <-w.stop:
		return true
	case <-w.s.done:
		return true
	default:
		return false
	}
}

// breakWith ends the watch with err (Retryable); later calls are ignored.
func (w *watcher) breakWith(err error) {
	w.brkOnce.Do(func() {
		w.brkErr = err
		close(w.brk)
	})
}

// Events returns the watch's events; the channel is closed when the watch
// ends.
func (w *watcher) Events() <-chan store.WatchEvent { return w.events }

// Err returns nil while the watch runs and after it was stopped (Stop, its
// context, or the store's Close), else the Retryable reason it broke.
func (w *watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stop ends the watch and waits until Events is closed. It may be called
// more than once and from any goroutine.
func (w *watcher) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}
