package actors

import (
	"encoding/binary"
	"time"

	"github.com/spate-go/coordination/internal/protocol"
)

// keyHolder is whose session a key this worker writes under its session
// nonce (its presence, the leader key) carries, as read after a lost
// compare or before a takeover.
type keyHolder int

const (
	holderGone  keyHolder = iota + 1 // the key is absent: the session it carried ended
	holderMine                       // this session's nonce: an earlier write of this session landed
	holderOther                      // another session's nonce: a twin (presence) or a new leader
)

// judgeHolder is the one rule that tells this session's own landed write
// from another session's (docs/protocol.md, "Sessions", "Leadership"):
// found and got are the read's result, nonce the session that wrote.
// What "another session" means is the caller's: a live twin for the
// presence key, a lost leadership for the leader key.
func judgeHolder(nonce string, found bool, got string) keyHolder {
	switch {
	case !found:
		return holderGone
	case got == nonce:
		return holderMine
	}
	return holderOther
}

// judgeRenewal classifies a lost presence renewal of session nonce from the
// Get that followed it (docs/protocol.md, "Sessions"): found and p are the
// read's result, readErr its error.
func judgeRenewal(nonce string, found bool, p protocol.PresenceRecord, readErr error) (renewOutcome, error) {
	if readErr != nil {
		return renewError, readErr
	}
	switch judgeHolder(nonce, found, p.Nonce) {
	case holderGone:
		return renewEnded, nil
	case holderMine:
		return renewOK, nil // an earlier renewal landed
	}
	return renewTwin, nil
}

// readBackLanded reports whether a read of a key this session renews (its
// presence, the leader key), made after a renewal at revision rev failed (a
// timeout, a lost reply), proves that a renewal landed (docs/protocol.md,
// "Sessions"): the key carries this session's nonce at a newer revision.
// found, got and gotRev are the read's result; readErr its error, a
// decoding error included.
func readBackLanded(nonce string, rev uint64, found bool, got string, gotRev uint64, readErr error) bool {
	return readErr == nil && gotRev > rev && judgeHolder(nonce, found, got) == holderMine
}

// renewRetryDelay is how long after a failed renewal of its presence or of
// the leader key a worker renews again instead of waiting for the next
// heartbeat (docs/protocol.md, "Sessions"): a quarter of a heartbeat, so an
// outage that swallows two heartbeats' renewals does not end a session once
// the store is back, while one renewal in flight at a time and at most four
// tries per heartbeat keep a struggling store from being hammered.
func renewRetryDelay(lease time.Duration) time.Duration { return lease / 12 }

// judgeTakeover reports whether the presence value p found when announcing
// session nonce after session ended is a live twin's (docs/protocol.md,
// "Sessions"): it is neither the ended session's nor nonce's own (an
// earlier attempt of the same announce that landed although its reply was
// an error). At startup (ended == "") any value is a predecessor's and is
// taken over, and so is an unreadable one (decodeErr).
func judgeTakeover(ended, nonce string, p protocol.PresenceRecord, decodeErr error) (twin bool) {
	return ended != "" && decodeErr == nil &&
		judgeHolder(ended, true, p.Nonce) == holderOther && judgeHolder(nonce, true, p.Nonce) == holderOther
}

// renewalClock is the liveness bookkeeping of one key this worker renews,
// its presence or the leader key (docs/protocol.md, "Sessions"): when the
// last write known to have landed was sent, and when the oldest renewal
// whose fate is unknown was sent. A write proven to have landed without its
// own reply is credited from the latter, never later than it was sent.
type renewalClock struct {
	lastOK       time.Time // clock time the last write known to have landed was sent
	unknownSince time.Time // send time of the oldest renewal whose fate is unknown (zero: none)
}

// restart resets the clock to one write landed, sent at at.
func (r *renewalClock) restart(at time.Time) { *r = renewalClock{lastOK: at} }

// sent records a renewal sent at at and returns the time a later proof that
// one of the unknown renewals landed is credited from.
func (r *renewalClock) sent(at time.Time) time.Time {
	if r.unknownSince.IsZero() {
		r.unknownSince = at
	}
	return r.unknownSince
}

// landed credits a renewal answered as landed, sent (or credited) at at;
// every earlier renewal's fate no longer matters.
func (r *renewalClock) landed(at time.Time) {
	if at.After(r.lastOK) {
		r.lastOK = at
	}
	r.unknownSince = time.Time{}
}

// proven credits a write seen landed (a watch put carrying this worker's
// nonce) from the oldest unknown renewal; one still in flight stays
// unknown. It reports whether there was anything to credit.
func (r *renewalClock) proven(inFlight bool) bool {
	if r.unknownSince.IsZero() {
		return false
	}
	since := r.unknownSince
	if since.After(r.lastOK) {
		r.lastOK = since
	}
	if !inFlight {
		r.unknownSince = time.Time{}
	}
	return true
}

// heartbeatInterval is LeaseDuration/3 × f_r with f_r in [0.8, 1.2) derived
// from (instance, nonce, round).
func heartbeatInterval(lease time.Duration, instance, nonce string, round uint64) time.Duration {
	return time.Duration(float64(lease/3) * jitter(instance, nonce, round))
}

// jitter returns f_r in [0.8, 1.2).
func jitter(instance, nonce string, round uint64) float64 {
	seed := protocol.H([]byte(instance + "\x00" + nonce))
	h := protocol.Hs(seed, binary.BigEndian.AppendUint64(nil, round))
	return 0.8 + 0.4*float64(h>>11)/float64(1<<53)
}
