// Package lease is the lease-renewal actor of one worker: the startup
// (presence key, twin detection), the heartbeat that renews the presence
// once per LeaseDuration/3, self-fencing of a starved session and the
// announcement of a new one (docs/protocol.md, "Sessions", "Joining").
//
// It imports no other actor's package: it reaches them only by message.
package lease
