package actors

import (
	"github.com/spate-go/coordination/internal/protocol"
)

// judgeRenewal classifies a lost lease renewal from the Get that followed
// it (§17.2): found and l are the read's result, readErr its error.
func judgeRenewal(me, nonce string, epoch uint64, found bool, l protocol.LeaseRecord, readErr error) (renewOutcome, error) {
	switch {
	case readErr != nil:
		return renewError, readErr
	case !found:
		return renewStarved, nil
	case l.Owner == me && l.Nonce == nonce && l.Epoch == epoch:
		return renewOK, nil
	case l.Owner == me && l.Nonce != nonce:
		return renewTwin, nil
	}
	return renewFenced, nil
}
