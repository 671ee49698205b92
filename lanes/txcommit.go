package lanes

import "github.com/spate-go/coordination"

// What an exactly-once sink needs of a lane (coordination.TxCommitter): the
// tenancy's epoch and the progress of the lane's last claim, which the sink
// commits in the same transaction as that claim's records.

// Epoch returns the fencing token of the tenancy the lane reads for.
func (l *Lane[P]) Epoch() coordination.LeaseEpoch { return l.epoch }

// Progress returns the progress that covers everything up to and including
// the lane's last claim, as the kit encodes it for commits (a key lane's
// claim count and last key; an offset lane's next offset), never completed.
// An exactly-once sink commits it with the claim's records: the kit's own
// later commits of the lane then carry it or an older watermark.
func (l *Lane[P]) Progress() coordination.SplitProgress {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.k.progress(l.pending, Range[P]{Start: l.start, End: l.end})
	p.Completed = false
	return p
}
