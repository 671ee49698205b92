package natsstore

import "time"

// Client timing derived from the lease TTL. The coordinator renews a lease
// about every LeaseDuration/3 and bounds each store operation by OpTimeout,
// which coordination.Config requires to be at most LeaseDuration/2; the
// store only knows the lease TTL (equal to LeaseDuration), so it derives
// everything from that.
const (
	// reconnectDivisor sets the reconnect wait (and, equally, its maximum
	// jitter) to leaseTTL/20, so a reconnect attempt follows a server's
	// return within leaseTTL/10 at most: well inside the LeaseDuration/3
	// between two renewals.
	reconnectDivisor = 20
	// maxReconnectWait caps the wait at the client's own default: longer
	// leases gain nothing from slower retries.
	maxReconnectWait = 2 * time.Second
	// minPingInterval keeps keep-alive pings cheap on short leases, and
	// keeps a client on a loaded machine (slow to read its PONGs) from
	// declaring a healthy connection stale.
	minPingInterval = 10 * time.Second
)

// connTiming is the client timing of one store.
type connTiming struct {
	// reconnectWait is the pause before each round of reconnect attempts
	// and reconnectJitter the most added to it at random.
	reconnectWait, reconnectJitter time.Duration
	// pingInterval is the keep-alive ping interval; two unanswered pings
	// declare the connection stale, so a connection that silently died is
	// noticed within about one lease.
	pingInterval time.Duration
	// stepLimit bounds one network step of a (re)connect: a server that
	// does not answer (a blackholed address) must not hold up the attempt
	// on the next one for longer than a third of the lease.
	stepLimit time.Duration
	// holdLimit bounds how long an operation issued while the connection
	// is down waits for the reconnect when its context has no earlier
	// deadline: the longest OpTimeout a coordinator with this lease may use.
	holdLimit time.Duration
}

// timingFor derives the client timing from a lease TTL of at least
// MinLeaseTTL.
func timingFor(leaseTTL time.Duration) connTiming {
	wait := min(leaseTTL/reconnectDivisor, maxReconnectWait)
	return connTiming{
		reconnectWait:   wait,
		reconnectJitter: wait,
		pingInterval:    max(leaseTTL/3, minPingInterval),
		stepLimit:       leaseTTL / 3,
		holdLimit:       leaseTTL / 2,
	}
}
