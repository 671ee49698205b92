// Package e2e holds the end-to-end tests on real NATS: a job of several
// workers, each with its own NATS connection, hollywood engine, coordinator
// and driver.Run, against an embedded server that is stopped and restarted
// on the same store mid-job, and against a 3-node R3 cluster with one node
// killed and brought back. A ledger of every delivery and a watch of every
// progress record check that every record is delivered, that no committed
// watermark ever decreases, and that what a split replays stays within the
// bound driver.Pauser states. At the end, coordctl audit reads the store's
// history of the job (64 revisions per key, enough for every write) and
// must find the fence held. The package has no non-test code.
//
// The progress watch is started with the workers, so its store opens the
// job's buckets while they provision them, and its first snapshot must be
// in within 3 s.
package e2e
