package coordination

// Event is one change reported by [Coordinator.Poll]. The interface is sealed:
// exactly [Gained], [Lost], [RevokeRequested], [Quarantined], [AllComplete]
// and [Stalled] implement it. Use a type switch.
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
func (Quarantined) isEvent()     {}
func (AllComplete) isEvent()     {}
func (Stalled) isEvent()         {}
