// Package messages holds what a user's own actor exchanges with a
// coordinator: the commands it may send the coordinator actor
// (actors.Coordinator.PID) with its context's Send, their replies, and the
// subscription to its events.
// The messages the coordinator's actors exchange among themselves are
// theirs alone, under actors/internal, where no user's package can import
// them.
//
// # Commands
//
//   - FailSplit fails a tenancy, as Coordinator.Fail: FailSplitReply.
//   - ReleaseSplits hands tenancies back, as Coordinator.Release (or
//     ReleaseDrained, with Drained): ReleaseSplitsReply.
//   - DeclineRevoke refuses a revocation, as Coordinator.DeclineRevoke:
//     DeclineRevokeReply.
//   - Subscribe and Unsubscribe begin and end a copy of the events
//     (below): SubscribeReply, UnsubscribeReply.
//
// # One reply per command
//
// Every command carries an optional ReplyTo and is answered exactly once,
// by its own reply type (the command's name plus Reply), at ReplyTo when
// it is set and else at the command's sender. A reply's Err is nil on
// success; otherwise its kind (coordination.KindOf) says what to do, as the
// Coordinator method's error does. Epoch is the epoch of the tenancy's
// Gained: a command for a tenancy that is no longer held writes nothing.
//
// # Events
//
// A user's actor observes the coordinator by Subscribe: it then receives a
// copy of every event Poll hands out (coordination.Gained, RevokeRequested,
// Lost, ...), in Poll's order, after a SubscribeReply naming the tenancies
// held when it began. The driver still receives and acts on every event.
//
// The package has no behaviour and promises nothing beyond the field docs.
package messages
