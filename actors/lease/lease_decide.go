package lease

import (
	"encoding/binary"
	"time"

	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
)

// judgeRenewal classifies a lost presence renewal of session nonce from the
// Get that followed it (docs/protocol.md, "Sessions"): found and p are the
// read's result, readErr its error.
func judgeRenewal(nonce string, found bool, p protocol.PresenceRecord, readErr error) (renewOutcome, error) {
	if readErr != nil {
		return renewError, readErr
	}
	switch worker.JudgeHolder(nonce, found, p.Nonce) {
	case worker.HolderGone:
		return renewEnded, nil
	case worker.HolderMine:
		return renewOK, nil // an earlier renewal landed
	}
	return renewTwin, nil
}

// judgeTakeover reports whether the presence value p found when announcing
// session nonce after session ended is a live twin's (docs/protocol.md,
// "Sessions"): it is neither the ended session's nor nonce's own (an
// earlier attempt of the same announce that landed although its reply was
// an error). An unreadable value (decodeErr) is taken over. At startup
// judgeStartupPresence decides instead.
func judgeTakeover(ended, nonce string, p protocol.PresenceRecord, decodeErr error) (twin bool) {
	return decodeErr == nil &&
		worker.JudgeHolder(ended, true, p.Nonce) == worker.HolderOther && worker.JudgeHolder(nonce, true, p.Nonce) == worker.HolderOther
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

// twinWindow is how long announcing presence at startup watches a presence
// key that carries another session after challenging that session, before
// taking the key over (docs/protocol.md, "Sessions", "Restart with the same
// id"): a quarter of LeaseDuration. A live session answers the challenge
// one watch delivery and one write after it (milliseconds), so a quarter
// lease leaves a wide margin for the answer; a crashed predecessor leaves
// the key standing, and a restart takes it over a quarter lease after its
// first read, within one heartbeat (LeaseDuration/3) even with the reads
// every LeaseDuration/12 rounding up.
func twinWindow(lease time.Duration) time.Duration { return lease / 4 }

// startupStep is what announcing presence at startup does next with the
// presence key.
type startupStep int

const (
	stepCreate   startupStep = iota + 1 // the key is absent: create it
	stepTakeOver                        // take the value over at its revision
	stepWait                            // another session's value, unchanged so far: read it again later
	stepTwin                            // another session wrote the key since it was first read: a live twin
)

// judgeStartupPresence decides from one read of the presence key at
// startup, announcing session nonce (docs/protocol.md, "Sessions",
// "Restart with the same id"): found, rev, got and decodeErr are the read's
// result (the nonce it carries and the value's decoding error); first is
// the revision of the first read that found the key (0: none yet), silent
// whether twinWindow has passed since then.
//
// This announce's own nonce is taken over at once (an earlier attempt
// landed although it reported an error). Another session's value, or an
// unreadable one, is a predecessor's only if it stands still for the
// window: the key at any revision but the first one read means another
// process wrote it meanwhile under this InstanceID, a live twin.
func judgeStartupPresence(nonce string, first uint64, found bool, rev uint64, got string, decodeErr error, silent bool) startupStep {
	switch {
	case !found:
		return stepCreate
	case decodeErr == nil && got == nonce:
		return stepTakeOver
	case first != 0 && rev != first:
		return stepTwin
	case first != 0 && silent:
		return stepTakeOver
	}
	return stepWait
}
