// Package watch is the watch actor of one worker: it keeps the two watches
// of the store open (presence and leader keys; plan, split and assignment
// records), reconciles by listing, and turns what it sees into typed
// observations routed to the actors that follow them (docs/protocol.md,
// "Watches and reconcile").
//
// It imports no other actor's package: it reaches them only by message.
package watch
