package actors

import (
	"github.com/spate-go/coordination/internal/protocol"
)

// judgeRenewal classifies a lost presence renewal of session nonce from the
// Get that followed it (docs/protocol.md, "Sessions"): found and p are the
// read's result, readErr its error.
func judgeRenewal(nonce string, found bool, p protocol.PresenceRecord, readErr error) (renewOutcome, error) {
	switch {
	case readErr != nil:
		return renewError, readErr
	case !found:
		return renewEnded, nil
	case p.Nonce == nonce:
		return renewOK, nil // an earlier renewal landed
	}
	return renewTwin, nil
}
