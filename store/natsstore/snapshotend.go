package natsstore

import "context"

// snapshotEnd decides where the snapshot of a watch (and so of a listing)
// ends. The client's own end-of-initial-values marker cannot decide it: the
// client sends it on the first message whose pending count reads 0, and the
// server's count runs low while writes land. A write that removes a
// message the consumer has not delivered yet (the key's older revision, on
// a one-revision bucket) lowers the count at once, but the write's own
// message raises it only when the stream's queue of new-message signals
// gets to it, so under write load a message in the middle of the replay can
// report nothing pending, and every key after it would be missing from the
// snapshot. The store uses the marker as a hint only.
//
// The snapshot ends once the replay has delivered a sequence at or past
// the bucket's last sequence under the watch's subject filter, read from
// the stream (its leader, on a replicated bucket) after that sequence was
// delivered. The replay delivers in stream order, so by the time of that
// read it had delivered every message at or below the sequence read that
// still existed when its turn came. A key live at the read has its last
// message there; that message was not replaced before its turn, since the
// replacement would then have come before the read. So the snapshot holds
// every key live for the whole call at its revision then or later, whether
// the replica serving the consumer was behind the leader or the marker came
// early. The first read (the floor) is made before the consumer exists and
// only sets the first target: nothing was delivered before it. A read that
// finds the replay behind sets the next target, read again once the replay
// reaches it; the marker also starts a read, which ends the snapshot if the
// message a target named went away (a limit marker expiring) with nothing
// after it.
//
// The reads run on their own goroutine, so the watch keeps taking the
// replay meanwhile; at most one runs at a time.
type snapshotEnd struct {
	last    func(context.Context) (uint64, error) // reads the last sequence
	seen    uint64                                // highest sequence delivered
	target  uint64                                // no read is due before seen reaches it
	reading bool                                  // a read is under way
	answers chan lastRead                         // its answer
}

// lastRead is the answer of one read of the last sequence: what the replay
// had delivered when it started, and what it found.
type lastRead struct {
	seen, last uint64
	err        error
}

// newSnapshotEnd starts tracking a replay whose floor was read before its
// consumer was created.
func newSnapshotEnd(last func(context.Context) (uint64, error), floor uint64) *snapshotEnd {
	return &snapshotEnd{last: last, target: floor, answers: make(chan lastRead, 1)}
}

// saw notes a delivered sequence and starts a read once the target is
// reached.
func (e *snapshotEnd) saw(ctx context.Context, seq uint64) {
	e.seen = max(e.seen, seq)
	if e.seen >= e.target {
		e.read(ctx)
	}
}

// read starts a read of the last sequence unless one is under way. Its
// answer arrives on answers; ctx ends it.
func (e *snapshotEnd) read(ctx context.Context) {
	if e.reading {
		return
	}
	e.reading = true
	seen := e.seen
	go func() {
		last, err := e.last(ctx)
		e.answers <- lastRead{seen: seen, last: last, err: err}
	}()
}

// settle takes the answer of a read and reports whether the snapshot is
// complete. Otherwise the sequence read is the next target, and a read
// starts at once if the replay has already reached it.
func (e *snapshotEnd) settle(ctx context.Context, r lastRead) (bool, error) {
	e.reading = false
	if r.err != nil {
		return false, r.err
	}
	if r.seen >= r.last {
		return true, nil
	}
	e.target = r.last
	if e.seen >= e.target {
		e.read(ctx)
	}
	return false, nil
}
