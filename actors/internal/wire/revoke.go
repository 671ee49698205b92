package wire

import (
	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
)

// RevocationRequested asks the root to emit RevokeRequested for a held split.
type RevocationRequested struct {
	Split coordination.SplitID
	Epoch uint64
}

// ForceRevocation asks the root to surrender a split whose revocation was
// forced (deadline, decline, or cancelled-then-silent) and hand it back.
// For a decline, ReplyTo is the DeclineRevoke's: the root answers it
// messages.DeclineRevokeReply once the tenancy is surrendered (or found
// already ended), without waiting for the hand-back's write.
type ForceRevocation struct {
	Split   coordination.SplitID
	Epoch   uint64
	ReplyTo *actor.PID
}

// CommitLanded reports a winning commit CAS of a held split (refreshes a
// revocation's last progress).
type CommitLanded struct {
	Split coordination.SplitID
	Epoch uint64
}
