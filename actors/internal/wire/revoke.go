package wire

import "github.com/spate-go/coordination"

// RevocationRequested asks the root to emit RevokeRequested for a held split.
type RevocationRequested struct {
	Split coordination.SplitID
	Epoch uint64
}

// ForceRevocation asks the root to surrender a split whose revocation was
// forced (deadline, decline, or cancelled-then-silent) and hand it back.
type ForceRevocation struct {
	Split coordination.SplitID
	Epoch uint64
}

// CommitLanded reports a winning commit CAS of a held split (refreshes a
// revocation's last progress).
type CommitLanded struct {
	Split coordination.SplitID
	Epoch uint64
}
