package pgstore

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// pollBatch is the most changes one catch-up query reads.
const pollBatch = 1000

// Watch delivers every live key under prefix as Put (one snapshot, read in
// one statement with the change log's high-water mark), then SnapshotDone,
// then every later change from the change log in revision order: puts,
// deletes and expiries. Prefixes are matched on the server. The watch
// catches up by revision whenever a notification (LISTEN/NOTIFY) wakes it;
// notifications only wake it, so none is needed for correctness while the
// LISTEN connection is up. The watch breaks with Retryable when that
// connection is lost (a notification may have been missed), when no
// catch-up query has landed for a lease (a failed or slow one is retried
// meanwhile), or when it has fallen behind the change log's retention; its
// owner re-watches. A row above the value cap or below revision 1
// (written outside the library) ends it Fatal, naming the key. A consumer
// that reads slowly only makes the watch lag: it reads the log at the
// consumer's pace.
func (s *Store) Watch(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	return s.startWatch(ctx, ks, prefix, false)
}

// WatchHistory delivers every change the change log still keeps of the
// keys of ks under prefix, oldest first in revision order (puts and
// deletes alike, an expiry as a Delete), then one SnapshotDone, then every
// later change as it lands. Revisions order writes across keys. It is meant
// for audits (coordctl audit), not coordinators; how much of the past it
// holds is Config.Retention of the handles that prune. Its errors and its
// ending are those of Watch.
func (s *Store) WatchHistory(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error) {
	return s.startWatch(ctx, ks, prefix, true)
}

// startWatch subscribes to notifications first, then reads the snapshot
// (or, for a history, the pruning point): a change that commits after the
// snapshot wakes the watch, and every change below the snapshot's
// high-water mark is in it.
func (s *Store) startWatch(ctx context.Context, ks store.Keyspace, prefix string, history bool) (store.Watcher, error) {
	pool, err := s.open(ctx)
	if err != nil {
		return nil, err
	}
	w := &watcher{
		s: s, ks: ks, prefix: prefix, history: history,
		events: make(chan store.WatchEvent),
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	sess, err := s.hub.join(ctx, w)
	if err != nil {
		return nil, err
	}
	snap, cursor, err := w.snapshot(ctx, pool)
	if err != nil {
		sess.leave(w)
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		sess.leave(w)
		return nil, errClosed()
	}
	s.goBusy(func() {
		defer close(w.done)
		defer sess.leave(w)
		err := w.run(ctx, pool, sess, snap, cursor)
		w.mu.Lock()
		w.err = err
		w.mu.Unlock()
		close(w.events)
	})
	return w, nil
}

// watcher is one running watch. Its goroutine reads the change log; events
// is unbuffered and closed by that goroutine when the watch ends, after err
// is set.
type watcher struct {
	s       *Store
	ks      store.Keyspace
	prefix  string
	history bool

	events   chan store.WatchEvent
	wake     chan struct{} // capacity 1: a change may be waiting
	stop     chan struct{} // closed by Stop
	done     chan struct{} // closed when the goroutine returns
	stopOnce sync.Once

	mu  sync.Mutex
	err error
}

// row is one row of a snapshot or catch-up query: a header (kind 0) with
// the high-water mark in rev and the pruning point, or an entry or change
// (kind 1; a nil value of a change is a delete).
type row struct {
	kind   int
	rev    int64
	pruned int64
	key    *string
	value  []byte
	size   *int32 // the value's length; nil for a header or a delete
}

// query runs a snapshot or catch-up statement and returns its header and
// rows in order.
func query(ctx context.Context, pool *pgxpool.Pool, q string, args ...any) (row, []row, error) {
	var head row
	var out []row
	err := retry(func() error {
		out = out[:0]
		rows, err := pool.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.kind, &r.rev, &r.pruned, &r.key, &r.value, &r.size); err != nil {
				return err
			}
			if r.kind == 0 {
				head = r
				continue
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	return head, out, err
}

// snapshot reads the live keys (or nothing, for a history) and returns them
// with the revision the tail starts after.
func (w *watcher) snapshot(ctx context.Context, pool *pgxpool.Pool) ([]store.WatchEvent, int64, error) {
	if w.history {
		head, _, err := query(ctx, pool, w.s.q.poll, int16(w.ks), w.prefix, prefixBound(w.prefix), int64(-1), 0)
		if err != nil {
			return nil, 0, w.s.fail(ctx, "reading the change log of "+w.what(), err)
		}
		return nil, head.pruned, nil
	}
	head, rows, err := query(ctx, pool, w.s.q.snapshot, int16(w.ks), w.prefix, prefixBound(w.prefix))
	if err != nil {
		return nil, 0, w.s.fail(ctx, "reading the snapshot of "+w.what(), err)
	}
	evs := make([]store.WatchEvent, 0, len(rows)+1)
	for _, r := range rows {
		if err := w.s.checkRead(w.ks, *r.key, r.size, r.rev); err != nil {
			return nil, 0, err
		}
		evs = append(evs, store.WatchEvent{Kind: store.Put, Entry: store.Entry{Key: *r.key, Value: r.value, Revision: store.Revision(r.rev)}})
	}
	return append(evs, store.WatchEvent{Kind: store.SnapshotDone}), head.rev, nil
}

// what names the watch for errors.
func (w *watcher) what() string {
	return "the watch of " + w.ks.String() + " keys under " + quote(w.prefix)
}

// quote renders a prefix for messages.
func quote(s string) string { return `"` + s + `"` }

// run delivers the snapshot, then catches up after cursor on every wake-up
// until the watch ends: nil when its owner ended it, else the Retryable
// reason it broke.
func (w *watcher) run(ctx context.Context, pool *pgxpool.Pool, sess *session, snap []store.WatchEvent, cursor int64) error {
	for _, ev := range snap {
		if !w.send(ctx, ev) {
			return nil
		}
	}
	// A history's past ends at the high-water mark of its first
	// catch-up; SnapshotDone follows once the cursor reaches it.
	past, pastKnown := w.history, false
	var pastEnd int64
	lastRead := time.Now()
	for {
		head, rows, err := w.poll(ctx, pool, cursor)
		if w.ended(ctx) {
			return nil
		}
		if err != nil {
			// A slow or failed catch-up loses nothing (the cursor stays):
			// try again, and break only once no catch-up has landed for a
			// lease, so that a loaded server costs no fresh snapshot but a
			// hung one still ends the watch.
			if coordination.KindOf(w.s.fail(ctx, "", err)) == coordination.Retryable && time.Since(lastRead) < w.s.leaseTTL {
				if !w.pause(ctx, sess) {
					return nil
				}
				continue
			}
			return w.s.fail(ctx, "catching up "+w.what(), err)
		}
		lastRead = time.Now()
		if head.pruned > cursor {
			return coordination.Errorf(coordination.Retryable, "pgstore: %s fell behind the change log's retention (it read up to revision %d, the log now starts after %d); watch again", w.what(), cursor, head.pruned)
		}
		if past && !pastKnown {
			pastEnd, pastKnown = head.rev, true
		}
		for _, r := range rows {
			if err := w.s.checkRead(w.ks, *r.key, r.size, r.rev); err != nil {
				return err
			}
			ev := store.WatchEvent{Kind: store.Put, Entry: store.Entry{Key: *r.key, Value: r.value, Revision: store.Revision(r.rev)}}
			if r.value == nil {
				ev = store.WatchEvent{Kind: store.Delete, Entry: store.Entry{Key: *r.key, Revision: store.Revision(r.rev)}}
			}
			if !w.send(ctx, ev) {
				return nil
			}
			cursor = r.rev
		}
		full := len(rows) == pollBatch
		if !full {
			cursor = max(cursor, head.rev)
		}
		if past && cursor >= pastEnd {
			past = false
			if !w.send(ctx, store.WatchEvent{Kind: store.SnapshotDone}) {
				return nil
			}
		}
		if full {
			continue
		}
		select {
		case <-w.wake:
		case <-sess.broken:
			if w.ended(ctx) {
				return nil
			}
			return coordination.Errorf(coordination.Retryable, "pgstore: %s lost its LISTEN connection (%v); notifications may have been missed, watch again", w.what(), sess.cause())
		case <-ctx.Done():
			return nil
		case <-w.stop:
			return nil
		case <-w.s.done:
			return nil
		}
	}
}

// retryPause is how long a watch waits before it retries a failed
// catch-up.
const retryPause = 100 * time.Millisecond

// pause waits retryPause before a retried catch-up and reports whether the
// watch goes on: false when its owner ended it. A lost LISTEN connection
// cuts the pause short; the wait after the next catch-up breaks the watch
// for it.
func (w *watcher) pause(ctx context.Context, sess *session) bool {
	t := time.NewTimer(retryPause)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-sess.broken:
		return true // the catch-up after it breaks the watch for the lost connection
	case <-ctx.Done():
	case <-w.stop:
	case <-w.s.done:
	}
	return false
}

// poll reads the changes after cursor, bounded by the store's statement
// bound so that a hung server breaks the watch, and by Close. The owner's
// ctx aborts it only endGrace after it ended: the watch ends once it
// returns. pgx gives up a connection whose statement is cancelled and
// dials the server to cancel it, a new backend's start (tens of
// milliseconds, which closing the pool then waits for), while a catch-up
// takes about a millisecond; a coordinator that departs ends its watches
// with such a catch-up often in flight.
func (w *watcher) poll(ctx context.Context, pool *pgxpool.Pool, cursor int64) (row, []row, error) {
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.s.opBound())
	defer cancel()
	stop := context.AfterFunc(w.s.life, cancel)
	defer stop()
	defer afterGrace(ctx, cancel)()
	return query(qctx, pool, w.s.q.poll, int16(w.ks), w.prefix, prefixBound(w.prefix), cursor, pollBatch)
}

// afterGrace calls cancel endGrace after ctx ends, unless the returned
// stop is called first.
func afterGrace(ctx context.Context, cancel context.CancelFunc) (stop func()) {
	var mu sync.Mutex
	var late *time.Timer // armed when ctx ends
	stopped := false
	unwatch := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			late = time.AfterFunc(endGrace, cancel)
		}
	})
	return func() {
		unwatch()
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		if late != nil {
			late.Stop()
		}
	}
}

// ended reports whether the owner ended the watch.
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

// send delivers ev, or returns false when the watch was ended first.
func (w *watcher) send(ctx context.Context, ev store.WatchEvent) bool {
	select {
	case w.events <- ev:
		return true
	case <-ctx.Done():
	case <-w.stop:
	case <-w.s.done:
	}
	return false
}

// notify wakes the watch if payload (a notification's "<keyspace>" or
// "<keyspace>:<head>", head a prefix of the written key: its first
// dot-terminated segment, or the whole key from schemas made before that)
// may concern it: the key may be under the watch's prefix when one of head
// and the prefix starts with the other. It never blocks.
func (w *watcher) notify(payload string) {
	ks, head, hasHead := cutPayload(payload)
	if ks != int(w.ks) || (hasHead && !strings.HasPrefix(head, w.prefix) && !strings.HasPrefix(w.prefix, head)) {
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// cutPayload splits a notification payload; ks is -1 when it does not
// parse, which wakes nobody.
func cutPayload(p string) (ks int, key string, hasKey bool) {
	if p == "" || (p[0] != '0' && p[0] != '1') {
		return -1, "", false
	}
	ks = int(p[0] - '0')
	if len(p) > 1 && p[1] == ':' {
		return ks, p[2:], true
	}
	return ks, "", false
}

// Events returns the watch's events; the channel is closed when the watch
// ends.
func (w *watcher) Events() <-chan store.WatchEvent { return w.events }

// Err returns nil while the watch runs and after it was stopped, else the
// Retryable reason it broke.
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
