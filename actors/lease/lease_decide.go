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
// an error). At startup (ended == "") any value is a predecessor's and is
// taken over, and so is an unreadable one (decodeErr).
func judgeTakeover(ended, nonce string, p protocol.PresenceRecord, decodeErr error) (twin bool) {
	return ended != "" && decodeErr == nil &&
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
