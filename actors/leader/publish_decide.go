package leader

// assignWrite is the fate of one assignment record write or guarded delete
// (docs/protocol.md, "Assignment and the rebalance delay").
type assignWrite int

const (
	assignWritten assignWrite = iota + 1 // it landed
	assignLost                           // its compare was lost: the cached record was stale
	assignFailed                         // the store failed; retried at the next heartbeat
)

// judgeAssignWrite classifies the reply to an assignment record's Create,
// Update or guarded Delete.
func judgeAssignWrite(ok bool, err error) assignWrite {
	switch {
	case err != nil:
		return assignFailed
	case ok:
		return assignWritten
	}
	return assignLost
}

// publishRetry is when the publisher evaluates again after a publish.
type publishRetry int

const (
	retryNone      publishRetry = iota // only on a new trigger
	retryNow                           // at once: the lost write refreshed the view
	retryHeartbeat                     // at the next heartbeat, so a stale view cannot spin
)

// judgeLosses classifies a publish's lost writes: lost says it had some,
// streak counts the publishes with lost writes in a row before it. It
// returns the new streak and when to evaluate again: a first loss is a
// trigger, a second in a row waits for the next heartbeat.
func judgeLosses(streak int, lost bool) (int, publishRetry) {
	switch {
	case !lost:
		return 0, retryNone
	case streak == 0:
		return 1, retryNow
	}
	return streak + 1, retryHeartbeat
}
