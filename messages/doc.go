// Package messages holds the typed messages the coordinator's actors
// exchange (see the actors package). Messages are plain values: slices are
// copied by the sender and no message carries a pointer to actor state.
//
// Naming follows one scheme: intents are imperative (ClaimSplit), facts are
// past participles (TenancyEnded), replies are the intent's name plus Reply
// and carry Err, and timer ticks end in Due (HeartbeatDue).
//
// The package has no behaviour and promises nothing beyond the field docs;
// it is internal plumbing exported only because the actors package and its
// tests live in another package.
package messages
