package worker

import "time"

// ReadBackLanded reports whether a read of a key this session renews (its
// presence, the leader key), made after a renewal at revision rev failed (a
// timeout, a lost reply), proves that a renewal landed (docs/protocol.md,
// "Sessions"): the key carries this session's nonce at a newer revision.
// found, got and gotRev are the read's result; readErr its error, a
// decoding error included.
func ReadBackLanded(nonce string, rev uint64, found bool, got string, gotRev uint64, readErr error) bool {
	return readErr == nil && gotRev > rev && JudgeHolder(nonce, found, got) == HolderMine
}

// RenewRetryDelay is how long after a failed renewal of its presence or of
// the leader key a worker renews again instead of waiting for the next
// heartbeat (docs/protocol.md, "Sessions"): a quarter of a heartbeat, so an
// outage that swallows two heartbeats' renewals does not end a session once
// the store is back, while one renewal in flight at a time and at most four
// tries per heartbeat keep a struggling store from being hammered.
func RenewRetryDelay(lease time.Duration) time.Duration { return lease / 12 }

// RenewalClock is the liveness bookkeeping of one key this worker renews,
// its presence or the leader key (docs/protocol.md, "Sessions"): when the
// last write known to have landed was sent, and when the oldest renewal
// whose fate is unknown was sent. A write proven to have landed without its
// own reply is credited from the latter, never later than it was sent.
type RenewalClock struct {
	LastOK       time.Time // clock time the last write known to have landed was sent
	UnknownSince time.Time // send time of the oldest renewal whose fate is unknown (zero: none)
}

// Restart resets the clock to one write landed, sent at at.
func (r *RenewalClock) Restart(at time.Time) { *r = RenewalClock{LastOK: at} }

// Sent records a renewal sent at at and returns the time a later proof that
// one of the unknown renewals landed is credited from.
func (r *RenewalClock) Sent(at time.Time) time.Time {
	if r.UnknownSince.IsZero() {
		r.UnknownSince = at
	}
	return r.UnknownSince
}

// Landed credits a renewal answered as landed, sent (or credited) at at;
// every earlier renewal's fate no longer matters.
func (r *RenewalClock) Landed(at time.Time) {
	if at.After(r.LastOK) {
		r.LastOK = at
	}
	r.UnknownSince = time.Time{}
}

// Proven credits a write seen landed (a watch put carrying this worker's
// nonce) from the oldest unknown renewal; one still in flight stays
// unknown. It reports whether there was anything to credit.
func (r *RenewalClock) Proven(inFlight bool) bool {
	if r.UnknownSince.IsZero() {
		return false
	}
	since := r.UnknownSince
	if since.After(r.LastOK) {
		r.LastOK = since
	}
	if !inFlight {
		r.UnknownSince = time.Time{}
	}
	return true
}
