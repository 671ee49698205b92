package wire

import (
	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
)

// FollowAssignment asks the revoke actor to apply the rules of
// docs/protocol.md, "Following the assignment", to each tenancy it lists
// and then to check its drains' deadlines. The split writer, which owns
// the held tenancies, sends it whenever an input of the rules changed: a tenancy
// started (it lists that one), the assigned set or the watches changed (it
// lists every held tenancy). The list is empty while the rules do not
// apply: no assignment record known, a watch not live, the verdict in or
// Depart begun.
type FollowAssignment struct {
	Tenancies []FollowedTenancy
}

// FollowedTenancy is one held tenancy of a FollowAssignment and whether
// this worker's assignment names its split.
type FollowedTenancy struct {
	Split    coordination.SplitID
	Epoch    uint64
	Assigned bool
}

// RevocationChanged reports a change of the revocation of a held tenancy
// (docs/protocol.md, "Revocation"): revoke, which drives each revocation,
// sends it to the split writer, which acts on it only while it holds the
// tenancy. Forced false: the revocation was requested (begun, or requested
// again after a cancel): the split writer raises RevokeRequested to the
// root (E6) unless the verdict is in or Depart began. Forced true: it was
// forced (deadline, decline, or cancelled-then-silent): the split writer
// surrenders the tenancy and hands it back. For a decline, ReplyTo is the
// DeclineRevoke's: it is answered messages.DeclineRevokeReply once the
// tenancy is surrendered (by the root, once the Lost is queued:
// EventsRaised.Decline) or found already ended (by the split writer),
// without waiting for the hand-back's write. A revocation's other changes
// (cancelled, drained) are revoke's own and told to nobody.
type RevocationChanged struct {
	Split   coordination.SplitID
	Epoch   uint64
	Forced  bool
	ReplyTo *actor.PID // a DeclineRevoke's, with Forced; nil otherwise
}

// CommitLanded reports a winning commit CAS of a held split (refreshes a
// revocation's last progress).
type CommitLanded struct {
	Split coordination.SplitID
	Epoch uint64
}
