// Package driver runs the source-side choreography over a
// coordination.Coordinator for an embedder that reads data through lanes, one
// per held split.
//
// The [Driver] turns the coordinator's events into calls on a [Source]: it
// opens a lane for each gained split (after validating carried progress),
// encodes and commits acknowledged watermarks with the right triage, sweeps
// splits that completed without a new watermark, drains revoked splits
// cooperatively and hands them back, reports poison, and leaves the job
// cleanly at Shutdown.
//
// # Usage
//
// [Run] is the whole control loop: it starts the coordinator, starts and
// stops lanes through the source's [Reader] methods, commits on an interval
// and shuts down on every way out, returning the job's outcome:
//
//	err := driver.Run(ctx, coord, src, driver.WithPlanner(planner))
//
// A hand-written loop over a [Driver] remains possible:
//
//	d := driver.New(coord, src, driver.WithStop(stop))
//	if err := d.Start(planner); err != nil { ... }
//	for {
//		ev, err := d.PollEvents(time.Second) // LanesAdded, LanesRevoked, LanesRetired, CommitReady, Drained, Idle
//		... // start or stop lanes; d.Commit(acked); d.Fail(split, reason) for poison
//	}
//	err := d.Shutdown(lastAcked)
//
// # Sources: the lane kit, or by hand
//
// Work read in position order within ranges (rows, offsets, sequence
// numbers, keys, object names) needs no source of its own: package lanes is
// a [SourceReader] (with [Pauser], [Splitter] and [PoisonReporter]) over a
// read function that claims each record's position before it processes
// it, and it owns the lanes, their watermarks, drains, pauses, runtime cuts
// and completion. An embedder with a lane model of its own implements
// SourceReader by hand, as below: ExampleSourceReader is a complete one,
// and docs/source.md in the module walks through another. Such a source
// should also weigh [Source]'s BeginRevoke and DrainReady (without them,
// every move is forced and replays what a lane read since its last commit)
// and [Splitter] (without it, the leader never cuts its splits).
//
// # Lanes, their two ids and their readers
//
// A lane is one held split being read. The driver names it two ways, and
// a source keeps both:
//
//   - a [LaneID] names one open attempt: [Opening].Lane, [Lane].ID, and the
//     lanes of StopLanes, PauseLanes and ResumeLanes (and of [LanesRevoked]
//     and [LanesRetired]);
//   - a [PartitionID] names the tenancy's stream of watermarks:
//     [Opening].Partition, [Lane].Partition, and every [Watermark] (what
//     Acked returns, what [Driver.Commit] takes, [CommitReady]).
//
// They differ only across a failed OpenSplit, which is retried with a fresh
// LaneID in the same tenancy, so watermarks stay keyed by the partition.
// Run starts only opened lanes, so from StartLanes to StopLanes the two
// name one lane one-to-one: keep the lane's PartitionID in its state and
// index the lanes by LaneID for StopLanes, PauseLanes and ResumeLanes.
//
// With [Run], StartLanes starts a reader goroutine per lane, from the
// lane's resume point; the reader advances the lane's acknowledged
// watermark and, at the end of its input, records the split for
// TakeFinishing and wakes the [Opening]'s Waker. StopLanes stops the
// readers and returns only once each has returned (a row in hand may be
// finished first), so the lanes acknowledge nothing more. Acked reports
// every lane still open, stopped ones included, under its PartitionID:
// Run's final commit reads it after the last StopLanes. A [Pauser] gates
// the readers at their next row and lets them read on; a paused lane may be
// stopped without being resumed. ExampleSourceReader shows such a source.
//
// # Rules of use
//
// A Driver is used by one goroutine, the embedder's control loop. It does no
// I/O of its own, starts no goroutines and emits no metrics; only PollEvents
// blocks, parked on [Driver.Waker] for at most its timeout. After
// [LanesRevoked], stop reading those lanes before the next PollEvents call;
// watermarks passed for them afterwards are ignored. Treat an error whose
// coordination.KindOf is Retryable as recoverable (log and keep polling) and
// every other error, plain errors included, as the end of the run; then call
// Shutdown, which always departs the job.
//
// # Guarantees
//
// Within one PollEvents call losses come first, then retirements, then new
// lanes, then the job's terminal state, so a split lost and re-gained in one
// batch yields LanesRevoked before LanesAdded. Every tenancy gets exactly one
// CloseSplit. A revocation of a lane that has read its whole range is
// answered by committing its completion; one the driver cannot drain
// otherwise reaches the coordinator as one DeclineRevoke. A deferred (Retryable) commit is superseded by the
// split's next commit and never re-sent by the driver on its own.
//
// Commit names no epoch, so a commit the embedder makes on a lane whose
// tenancy the coordinator has just ended can land on a new tenancy of the
// same split that this worker claimed but the driver has not polled yet.
// Such a loss and re-gain always arrive in one batch; the driver then opens
// the new lane at this worker's last durable commit of the split when it is
// ahead of the carried progress, so the lane neither replays those records
// nor moves the watermark backwards.
//
// # Non-guarantees
//
// The driver does not retry commits, does not recover panics raised by the
// source, and does not stop lanes itself: the embedder owns them. Delivery is
// at least once; a forced move replays at most the records acknowledged after
// the split's last durable commit. [Run] bounds those during a store outage
// only for a source that implements [Pauser]: it pauses a lane whose commits
// have not landed for [WithPauseAfter] and resumes it when one lands. A
// hand-written loop over a Driver gets no such backpressure.
package driver
