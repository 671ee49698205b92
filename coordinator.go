package coordination

// Coordinator is one worker's handle on a job. Calls come from one goroutine
// (the driver) but implementations serialize concurrent calls safely. Every
// call is bounded in real time even when the store stops answering, and none
// needs polling to keep leases alive: renewal runs in the background.
//
// Errors are *Error values; test them with errors.Is against [ErrRetryable],
// [ErrFenced] and [ErrFatal], or with [KindOf].
type Coordinator interface {
	// SetWaker hands over the Waker the coordinator signals after enqueuing
	// events or latching a failure. Call it once, before Start.
	SetWaker(w *Waker)
	// SetStop hands over the run's stop channel (nil removes it). Once it is
	// closed, Commit, Fail, Release, ReleaseDrained and DeclineRevoke stop
	// waiting on the store within about 100ms and return Retryable; the
	// operation may still land.
	SetStop(stop <-chan struct{})
	// Start joins the job with planner p and returns at once; startup I/O runs
	// in the background and its failures surface through Poll.
	Start(p Planner) error
	// Poll returns the events enqueued since the previous call, in decision
	// order (nil when none). It never blocks. After a Fatal failure and once
	// earlier events are drained, it returns the latched error.
	Poll() ([]Event, error)
	// Commit durably writes the progress of a held split through a fenced
	// compare-and-swap. nil means durable; Fenced means nothing was written
	// and the split is gone; Retryable means the write may or may not have
	// landed.
	Commit(split SplitID, progress SplitProgress) error
	// CommitFinal is the last commit of a stop: one result per entry, in
	// order, each with the meaning of a Commit result. It ignores the stop
	// and returns within about one OpTimeout.
	CommitFinal(commits []Commit) []error
	// Fail reports a held split as unprocessable by the tenancy of epoch. It
	// surrenders the split at once and charges one delivery attempt; at the
	// attempt cap the split is quarantined.
	Fail(split SplitID, epoch LeaseEpoch, reason string) error
	// Release hands held splits back without charging an attempt, so peers
	// claim them at once. Names not held are ignored. The worker stays a
	// member of the job.
	Release(splits ...SplitID) error
	// ReleaseDrained hands back splits drained after RevokeRequested: a
	// Release accounted as a completed drain, never a departure.
	ReleaseDrained(splits ...SplitID) error
	// DeclineRevoke refuses a RevokeRequested the caller cannot drain: a live
	// revocation is forced at once (Lost follows).
	DeclineRevoke(split SplitID) error
	// Depart leaves the job for good: it hands back every owned split,
	// leadership and presence. It must be the last call, even when nothing
	// is held.
	Depart(held ...SplitID) error
}
