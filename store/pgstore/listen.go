package pgstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spate-go/coordination"
)

// hub owns the store's LISTEN connection: one connection outside the pool,
// listening on the job's channel, shared by every watch of the store. A
// session is one such connection's life; when it is lost, its watches
// break and the next Watch dials a new one.
type hub struct {
	s   *Store
	sem chan struct{} // capacity 1: one dial at a time

	mu  sync.Mutex
	cur *session // the live session, or nil
}

// session is one LISTEN connection's life and the watches it wakes.
type session struct {
	broken chan struct{} // closed once, when the connection is lost

	mu   sync.Mutex
	subs map[*watcher]struct{}
	err  error // why it broke
}

// join registers w with the live session, dialing one first if there is
// none. The session is listening when join returns.
func (h *hub) join(ctx context.Context, w *watcher) (*session, error) {
	select {
	case h.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, h.s.ctxErr("waiting for the LISTEN connection", ctx.Err())
	}
	defer func() { <-h.sem }()
	h.mu.Lock()
	sess := h.cur
	h.mu.Unlock()
	if sess == nil || sess.isBroken() {
		var err error
		if sess, err = h.dial(ctx); err != nil {
			return nil, err
		}
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.err != nil {
		return nil, coordination.Errorf(coordination.Retryable, "pgstore: the LISTEN connection was lost as the watch started: %w", sess.err)
	}
	sess.subs[w] = struct{}{}
	return sess, nil
}

// dial opens a LISTEN connection and starts reading its notifications.
func (h *hub) dial(ctx context.Context) (*session, error) {
	s := h.s
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, s.fail(ctx, "opening the LISTEN connection", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+s.sc.ident); err != nil {
		_ = conn.Close(context.Background())
		return nil, s.fail(ctx, "listening on channel "+s.sc.name, err)
	}
	sess := &session{broken: make(chan struct{}), subs: map[*watcher]struct{}{}}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = conn.Close(context.Background())
		return nil, errClosed()
	}
	h.mu.Lock()
	h.cur = sess
	h.mu.Unlock()
	s.wg.Go(func() { h.read(conn, sess) })
	return sess, nil
}

// pingEvery is how often an idle LISTEN connection is checked, so that a
// connection that died silently breaks its watches within about a lease.
func (s *Store) pingEvery() time.Duration { return max(s.leaseTTL/3, time.Second) }

// read wakes the session's watches on every notification until the
// connection is lost or the store is closed.
func (h *hub) read(conn *pgx.Conn, sess *session) {
	s := h.s
	defer func() { _ = conn.Close(context.Background()) }()
	for {
		ctx, cancel := context.WithTimeout(s.life, s.pingEvery())
		n, err := conn.WaitForNotification(ctx)
		cancel()
		if s.life.Err() != nil {
			sess.end(errClosed())
			return
		}
		if err != nil && errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed() {
			pctx, cancel := context.WithTimeout(s.life, s.opBound())
			err = conn.Ping(pctx)
			cancel()
		}
		if err != nil {
			if s.life.Err() != nil {
				err = errClosed()
			} else {
				s.log.Warn("listen connection lost; watches break and restart", "job", s.cfg.Job, "err", redactedReason(err, s.cfg))
			}
			sess.end(err)
			return
		}
		if n != nil {
			sess.wake(n.Payload)
		}
	}
}

// wake passes a notification to every watch of the session.
func (sess *session) wake(payload string) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	for w := range sess.subs {
		w.notify(payload)
	}
}

// end marks the session lost: its watches break.
func (sess *session) end(err error) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.err == nil {
		sess.err = err
		close(sess.broken)
	}
}

// leave unregisters w.
func (sess *session) leave(w *watcher) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	delete(sess.subs, w)
}

// isBroken reports whether the connection was lost.
func (sess *session) isBroken() bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.err != nil
}

// cause returns why the session broke.
func (sess *session) cause() error {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.err
}
