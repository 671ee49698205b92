package coordination

// Event is one change reported by [Coordinator.Poll]. The interface is sealed:
// exactly [Gained], [Lost], [RevokeRequested], [CutRequested], [Quarantined],
// [AllComplete] and [Stalled] implement it. Use a type switch; a switch
// with no case for CutRequested ignores it, which is always safe.
type Event interface{ isEvent() }

// Gained reports that this worker now holds a split.
type Gained struct {
	// Split is the stored spec; its weight is at least 1.
	Split SplitSpec
	// Epoch is the tenancy's fencing token, strictly above every earlier
	// epoch of the split.
	Epoch LeaseEpoch
	// Progress is the last committed or seeded progress; nil if none.
	Progress *SplitProgress
}

// Lost reports that a tenancy ended involuntarily (fenced by a peer,
// self-fenced, or a forced revocation). Stop the split; later commits are
// Fenced.
type Lost struct{ Split SplitID }

// RevokeRequested reports that the leader no longer assigns this held split
// here. Drain it and call ReleaseDrained, or call DeclineRevoke.
type RevokeRequested struct{ Split SplitID }

// CutRequested reports that the leader asks this worker to cut a held
// split, because lanes of the fleet would otherwise idle while this split
// still has much to do (docs/protocol.md, "Runtime split"). Keep is the
// share of the remaining work the primary should keep, at least 0.5 and
// below 1. A driver whose source can cut calls driver.Splitter's TrySplit
// and then [Cutter.CommitCut], Parts times in a row (each cut confirmed
// before the next); ignoring it is always safe: the request expires and
// nothing is written.
type CutRequested struct {
	Split SplitID
	Epoch LeaseEpoch
	// Keep is the share of what remains the primary keeps once every part
	// is cut off.
	Keep float64
	// Parts is how many residuals to cut off, the rest divided equally
	// among them: 1, or more when more lanes idle than there are splits
	// worth a cut. 0 counts as 1.
	Parts int
}

// Cuts returns the number of cuts the request asks for: Parts, at least 1.
func (r CutRequested) Cuts() int { return max(r.Parts, 1) }

// KeepAt returns the keep to pass to the i-th cut (1..Cuts) of the
// request: each cut takes one residual's equal share off the tail of what
// is left, so that after the last the primary keeps Keep of what remained
// and every residual (1-Keep)/Cuts. For one part it is Keep itself.
func (r CutRequested) KeepAt(i int) float64 {
	n := r.Cuts()
	s := (1 - r.Keep) / float64(n)
	return (r.Keep + float64(n-i)*s) / (r.Keep + float64(n-i+1)*s)
}

// Quarantined reports that a split exhausted its delivery attempts. It is
// never offered again and blocks [AllComplete].
type Quarantined struct {
	Split    SplitID
	Attempts uint32
}

// AllComplete is the verdict of a bounded job whose every split completed. It
// is the last event a worker emits for the job.
type AllComplete struct{}

// Stalled is the verdict of a bounded job whose every split is terminal and at
// least one is quarantined. It is the last event a worker emits for the job.
type Stalled struct{ Completed, Quarantined uint64 }

func (Gained) isEvent()          {}
func (Lost) isEvent()            {}
func (RevokeRequested) isEvent() {}
func (CutRequested) isEvent()    {}
func (Quarantined) isEvent()     {}
func (AllComplete) isEvent()     {}
func (Stalled) isEvent()         {}
