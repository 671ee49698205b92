// Package revoke is the revocation-drain actor of one worker: it drives
// each revocation of a split this worker is no longer named for to exactly
// one outcome, drained (cooperatively), forced (at the deadline) or
// cancelled (docs/protocol.md, "Revocation").
//
// It imports no other actor's package: it reaches them only by message.
package revoke
