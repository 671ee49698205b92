// Package e2e holds the end-to-end tests on real stores: a job of several
// workers, each with its own store handle (its own connections), hollywood
// engine, coordinator and driver.Run, against an embedded NATS server that
// is stopped and restarted on the same store mid-job, against a 3-node R3
// cluster with one node killed and brought back, and against a real
// PostgreSQL server restarted (fast shutdown) at 30% of the job and, in a
// second run, killed with SIGKILL and started again on its data directory. A ledger of every delivery and a watch of every
// progress record check that every record is delivered, that no committed
// watermark ever decreases, and that what a split replays stays within the
// bound driver.Pauser states. At the end, coordctl audit reads the store's
// history of the job (64 revisions per key on NATS, enough for every
// write; the change log on PostgreSQL) and must find the fence held. The package has no non-test code.
//
// The progress watch is started with the workers, so its store opens the
// job's buckets while they provision them, and its first snapshot must be
// in before a request to a forming stream would have timed out (watchReady).
package e2e
