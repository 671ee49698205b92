package natsstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/spate-go/coordination"
)

// lossLogInterval is the least time between two "connection to NATS lost"
// lines of one connection; losses in between are counted and reported by
// the next line, and their recoveries are not logged.
const lossLogInterval = 10 * time.Second

// holdPoll is how often an operation waiting for a reconnect rechecks the
// connection, in case a status change was missed.
const holdPoll = 50 * time.Millisecond

// link follows one connection's status through a nats.go status listener
// (which, unlike the connection's callbacks, works the same on a
// connection passed in by the caller). When the connection is lost, the
// store breaks the watches on it and logs the loss, rate-limited; when it
// comes back, the store logs the downtime; operations issued meanwhile wait
// for it (see Store.awaitUp).
//
// The listener drops events while its buffer (10) is full; its goroutine
// only records and signals, so that takes a burst of flaps, and a loss
// missed anyway is caught on the next CONNECTED by the client's reconnect
// count, and by operations rechecking every holdPoll.
type link struct {
	ch chan nats.Status // the listener; closed by unfollow

	mu         sync.Mutex
	down       bool
	lostAt     time.Time     // when the current or last loss began
	losses     uint64        // losses seen so far
	reconnects uint64        // the client's reconnect count when last seen up
	changed    chan struct{} // closed and replaced at every change of down
	server     string        // the server last connected to, redacted
	lossLogged bool          // the current loss was logged (so its recovery is)
	limit      logLimiter
}

// follow starts following c's status; the store's wait group owns the
// goroutine, which ends when unfollow removes the listener.
func (s *Store) follow(c *conn) {
	l := &link{
		changed:    make(chan struct{}),
		server:     RedactURL(c.nc.ConnectedUrl()),
		reconnects: c.nc.Stats().Reconnects,
		limit:      logLimiter{every: lossLogInterval},
	}
	l.ch = c.nc.StatusChanged(nats.CONNECTED, nats.RECONNECTING, nats.DISCONNECTED, nats.CLOSED)
	c.link = l
	if !c.nc.IsConnected() {
		s.linkDown(c, c.nc.Status()) // lost before the listener was registered
	}
	s.wg.Go(func() {
		for st := range l.ch {
			if st == nats.CONNECTED {
				s.linkUp(c)
			} else {
				s.linkDown(c, st)
			}
		}
	})
}

// unfollow removes c's status listener, which ends its goroutine. It may be
// called more than once.
func (c *conn) unfollow() {
	if c.link != nil {
		c.nc.RemoveStatusListener(c.link.ch)
	}
}

// release ends the store's use of c: it stops following c and closes the
// connection unless the caller passed it in (Config.Conn).
func (c *conn) release() {
	c.unfollow()
	if c.owned {
		c.nc.Close()
	}
}

// linkDown records that c is no longer connected (st says how), breaks its
// watches and logs the loss unless the rate limit holds it back. A loss
// already recorded is ignored.
func (s *Store) linkDown(c *conn, st nats.Status) {
	l := c.link
	now := time.Now()
	l.mu.Lock()
	if l.down {
		l.mu.Unlock()
		return
	}
	l.down, l.lostAt = true, now
	l.losses++
	close(l.changed)
	l.changed = make(chan struct{})
	ok, suppressed := l.limit.allow(now)
	l.lossLogged = ok
	server := l.server
	l.mu.Unlock()

	s.connectionLost(c)
	if !ok {
		return
	}
	attrs := []any{"server", server}
	if suppressed > 0 {
		attrs = append(attrs, "suppressed", suppressed)
	}
	if st == nats.CLOSED {
		s.log.Warn("connection to NATS closed", attrs...)
		return
	}
	s.log.Warn("connection to NATS lost, reconnecting", attrs...)
}

// linkUp records that c is connected again and logs the downtime if the
// loss was logged. A reconnect whose loss was not seen (its event dropped)
// still breaks the watches.
func (s *Store) linkUp(c *conn) {
	l := c.link
	now := time.Now()
	server := RedactURL(c.nc.ConnectedUrl())
	reconnects := c.nc.Stats().Reconnects
	l.mu.Lock()
	l.server = server
	missed := !l.down && reconnects != l.reconnects
	l.reconnects = reconnects
	if !l.down {
		if missed {
			l.losses++
		}
		l.mu.Unlock()
		if missed {
			s.connectionLost(c)
		}
		return
	}
	l.down = false
	close(l.changed)
	l.changed = make(chan struct{})
	downtime, logged := now.Sub(l.lostAt), l.lossLogged
	l.mu.Unlock()
	if logged {
		s.log.Info("reconnected to NATS", "server", server, "downtime", downtime.Round(time.Millisecond))
	}
}

// lossCount returns the number of losses seen.
func (l *link) lossCount() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.losses
}

// changes returns a channel closed at the next change.
func (l *link) changes() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// downFor says how long the connection has been down, for error messages:
// "connection lost 1.2s ago, " or "" when the loss is not recorded yet.
func (l *link) downFor() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.down {
		return ""
	}
	return fmt.Sprintf("connection lost %s ago, ", time.Since(l.lostAt).Round(time.Millisecond))
}

// awaitUp returns once c is connected. While it is not, the operation is
// held rather than sent (and refused or buffered by the client): until the
// connection is back, ctx ends, or the store's hold limit (leaseTTL/2, the
// longest OpTimeout a coordinator with this lease uses) passes; the last
// two are Retryable, and nothing was sent. A closed connection is not
// waited for.
func (s *Store) awaitUp(ctx context.Context, c *conn) error {
	if c.nc.IsConnected() {
		return nil
	}
	hold, cancel := context.WithTimeout(ctx, s.timing.holdLimit)
	defer cancel()
	tick := time.NewTicker(holdPoll)
	defer tick.Stop()
	for {
		changed := c.link.changes()
		switch {
		case c.nc.IsConnected():
			return nil
		case c.nc.IsClosed():
			return s.closedConnErr(c)
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-s.done:
			return errClosed()
		case <-hold.Done():
			return s.ctxErr("not connected to NATS ("+c.link.downFor()+"reconnecting); nothing was sent", hold.Err())
		}
	}
}

// maxResends bounds how often one operation is sent again after the client
// refused its request.
const maxResends = 3

// resend runs one attempt of an operation and, while the client refused a
// request of it because the connection had just dropped (see notSent),
// runs it again: nothing was sent, and the next attempt waits for the
// reconnect (awaitUp) within the same context. Every write an attempt
// made before the refused request lost its precondition, so running the
// whole operation again writes at most once.
func (s *Store) resend(ctx context.Context, attempt func() error) error {
	for n := 0; ; n++ {
		err := attempt()
		if err == nil || !notSent(err) || n == maxResends || ctx.Err() != nil {
			return err
		}
	}
}

// closedConnErr is the error of an operation on a closed connection: the
// next operation dials afresh, except on a connection passed in, which the
// store never reopens.
func (s *Store) closedConnErr(c *conn) error {
	if s.isClosed() {
		return errClosed()
	}
	if !c.owned {
		return coordination.Errorf(coordination.Fatal, "natsstore: the connection passed as Config.Conn is closed; the store never reopens it (pass an open connection, or Servers instead)")
	}
	return coordination.Errorf(coordination.Retryable, "natsstore: the connection to NATS closed; the next operation reconnects")
}
