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

// watchSetupTimeout bounds the creation of a watch's consumer when the
// caller's context has no earlier deadline.
const watchSetupTimeout = 10 * time.Second

// watcher is one running watch. The run goroutine owns the queue and the
// client watcher; events is unbuffered and closed by run when the watch
// ends, after err is set.
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
	// watcher, the cancel func of its subscription, on a single-replica
	// bucket the stream's last sequence before the consumer was created
	// (see loop), and on a replicated bucket the snapshot already read (see
	// freshSnapshot).
	kw       jetstream.KeyWatcher
	cancel   context.CancelFunc
	floor    uint64
	snapshot []store.WatchEvent
	replayed bool

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
// revision). The watch ends with Err nil when ctx is done, Stop is called
// or the store is closed; it breaks with Retryable when the connection is
// lost, the client ends the subscription, or the consumer falls more than
// 65536 events behind. Creating the watch's consumer is bounded by ctx and
// by 10s. On a replicated bucket Watch reads the snapshot before it
// returns, to make sure the replica serving it is current (see
// freshSnapshot); the snapshot is then held in memory. On a single-replica
// bucket the snapshot streams, and a delete made after Watch returned that
// the initial replay absorbs arrives as a Delete right after SnapshotDone.
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
		events: make(chan store.WatchEvent),
		stop:   make(chan struct{}),
		brk:    make(chan struct{}),
		done:   make(chan struct{}),
	}
	if b.stream != nil {
		if err := w.freshSnapshot(ctx); err != nil {
			return nil, err
		}
	} else {
		if w.floor, err = b.lastSeq(ctx); err != nil {
			return nil, s.watchErr(ctx, w.bucket, err)
		}
		if err := w.start(ctx); err != nil {
			return nil, s.watchErr(ctx, w.bucket, err)
		}
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

// freshSnapshot starts the watch on a replicated bucket. The server may
// place the watch's consumer on a follower that lags the leader, and its
// snapshot would then miss writes that completed before Watch was called.
// So Watch reads the leader's last sequence under the filter first, then
// reads the whole snapshot before returning, and starts over (on a consumer
// the server places anew) while the snapshot has not reached that
// sequence. Watch returns only once the snapshot is current, so every write
// made after it returns still reaches the tail.
func (w *watcher) freshSnapshot(ctx context.Context) error {
	for restarts := 0; ; restarts++ {
		floor, err := w.b.leaderLast(ctx, w.filter)
		if err != nil {
			return w.s.watchErr(ctx, w.bucket, err)
		}
		if err := w.start(ctx); err != nil {
			return w.s.watchErr(ctx, w.bucket, err)
		}
		var snap []store.WatchEvent
		var seen uint64
	replay:
		for {
			select {
			case <-ctx.Done():
				w.end()
				return w.s.ctxErr("watching bucket "+w.bucket, ctx.Err())
			case <-w.s.done:
				w.end()
				return errClosed()
			case e, ok := <-w.kw.Updates():
				if !ok {
					w.end()
					if w.s.isClosed() {
						return errClosed()
					}
					return coordination.Errorf(coordination.Retryable, "natsstore: watching bucket %s: the NATS client ended the watch during its snapshot", w.bucket)
				}
				if e == nil {
					break replay
				}
				seen = max(seen, e.Revision())
				if e.Operation() == jetstream.KeyValuePut && strings.HasPrefix(e.Key(), w.prefix) {
					snap = append(snap, store.WatchEvent{Kind: store.Put, Entry: entry(e)})
					w.s.puts.note(w.ks, e.Key(), store.Revision(e.Revision()))
				}
			}
		}
		if seen >= floor {
			w.snapshot, w.replayed = append(snap, store.WatchEvent{Kind: store.SnapshotDone}), true
			return nil
		}
		w.end()
		if restarts == maxStaleRestarts {
			return coordination.Errorf(coordination.Retryable, "natsstore: watching bucket %s: the replica serving the watch stayed behind the stream leader (sequence %d, leader at %d)", w.bucket, seen, floor)
		}
		if err := sleepCtx(ctx, staleBackoff(restarts+1)); err != nil {
			return w.s.ctxErr("watching bucket "+w.bucket, err)
		}
	}
}

// sleepCtx waits for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
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
// passed as Config.Conn) waits out the client's request timeout.
func (w *watcher) run(ctx context.Context) {
	defer close(w.done)
	err := w.loop(ctx)
	w.s.mu.Lock()
	delete(w.s.watches, w)
	w.s.mu.Unlock()
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
	close(w.events)
	w.end()
}

// loop is run's body; it returns nil when the watch was ended by its
// owner, else the Retryable reason it broke.
//
// The client's initial replay is the consumer's initial pending count of
// messages, and a write racing the watch's start that supersedes a message
// not yet delivered takes that message's place in it. A put there is a
// snapshot Put; a delete cannot be (the snapshot holds no deletes), so one
// above the floor, made after the watch started, is held back and delivered
// right after SnapshotDone unless a later put of its key arrives first.
// Deletes at or below the floor predate the watch and are skipped.
func (w *watcher) loop(ctx context.Context) error {
	queue := w.snapshot
	w.snapshot = nil
	snapshot := !w.replayed
	updates := w.kw.Updates()
	racing := map[string]store.Revision{} // held-back deletes, by key
	for {
		var out chan<- store.WatchEvent
		var next store.WatchEvent
		if len(queue) > 0 {
			out, next = w.events, queue[0]
		}
		in := updates
		if snapshot && len(queue) >= w.limit {
			in = nil // pace the initial replay instead of breaking
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
		case e, ok := <-in:
			if !ok {
				if w.ended(ctx) {
					return nil
				}
				return coordination.Errorf(coordination.Retryable, "natsstore: watch of bucket %s was ended by the NATS client (connection closed or consumer lost); re-watch", w.bucket)
			}
			if e == nil { // end of the initial values
				if snapshot {
					snapshot = false
					queue = append(queue, store.WatchEvent{Kind: store.SnapshotDone})
					queue = appendDeletes(queue, racing)
					racing = nil
				}
				continue
			}
			if !strings.HasPrefix(e.Key(), w.prefix) {
				continue
			}
			put := e.Operation() == jetstream.KeyValuePut
			if snapshot && !put {
				if e.Revision() > w.floor {
					racing[e.Key()] = store.Revision(e.Revision())
				}
				continue
			}
			if snapshot {
				delete(racing, e.Key())
			}
			if !snapshot && len(queue) >= w.limit {
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

// maxStaleRestarts bounds how often a watch or listing on a replicated
// bucket starts over because the replica serving it lagged the leader.
const maxStaleRestarts = 10

// staleBackoff is the wait before retry n of a stale snapshot: 10ms
// doubling, at most 500ms.
func staleBackoff(n int) time.Duration {
	return min(10*time.Millisecond<<n, 500*time.Millisecond)
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

// List returns every live key under prefix (plain string prefix) from one
// ordered snapshot of the bucket: a watch with the same subject filter that
// ends at the end of its initial replay. Entries come in stream order. On a
// replicated bucket a snapshot from a replica behind the leader is
// discarded and taken again.
func (s *Store) List(ctx context.Context, ks store.Keyspace, prefix string) (entries []store.Entry, err error) {
	err = s.resend(ctx, func() (err error) {
		entries, err = s.list(ctx, ks, prefix)
		return err
	})
	return entries, err
}

// list is one attempt of List.
func (s *Store) list(ctx context.Context, ks store.Keyspace, prefix string) ([]store.Entry, error) {
	b, _, err := s.bucketConn(ctx, ks)
	if err != nil {
		return nil, err
	}
	filter := subjectFilter(prefix)
	for restarts := 0; ; restarts++ {
		var floor uint64
		if b.stream != nil {
			if floor, err = b.leaderLast(ctx, filter); err != nil {
				return nil, s.watchErr(ctx, b.kv.Bucket(), err)
			}
		}
		out, seen, err := s.listOnce(ctx, b.kv, ks, filter, prefix)
		if err != nil || seen >= floor {
			return out, err
		}
		if restarts == maxStaleRestarts {
			return nil, coordination.Errorf(coordination.Retryable, "natsstore: listing bucket %s: the replica serving it stayed behind the stream leader (sequence %d, leader at %d)", b.kv.Bucket(), seen, floor)
		}
		if err := sleepCtx(ctx, staleBackoff(restarts+1)); err != nil {
			return nil, s.ctxErr("listing bucket "+b.kv.Bucket(), err)
		}
	}
}

// listOnce takes one snapshot: the live keys under prefix and the highest
// sequence the replay held (deletes included).
func (s *Store) listOnce(ctx context.Context, kv jetstream.KeyValue, ks store.Keyspace, filter, prefix string) ([]store.Entry, uint64, error) {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kw, err := kv.Watch(lctx, filter)
	if err != nil {
		return nil, 0, s.watchErr(ctx, kv.Bucket(), err)
	}
	defer func() { _ = kw.Stop() }()
	out := []store.Entry{}
	var seen uint64
	for {
		select {
		case <-ctx.Done():
			return nil, 0, s.ctxErr("listing bucket "+kv.Bucket(), ctx.Err())
		case e, ok := <-kw.Updates():
			if !ok {
				if ctx.Err() != nil {
					return nil, 0, s.ctxErr("listing bucket "+kv.Bucket(), ctx.Err())
				}
				return nil, 0, coordination.Errorf(coordination.Retryable, "natsstore: listing bucket %s: the NATS client ended the listing (connection closed or consumer lost)", kv.Bucket())
			}
			if e == nil {
				return out, seen, nil
			}
			seen = max(seen, e.Revision())
			if e.Operation() == jetstream.KeyValuePut && strings.HasPrefix(e.Key(), prefix) {
				out = append(out, entry(e))
				s.puts.note(ks, e.Key(), store.Revision(e.Revision()))
			}
		}
	}
}
