package testkit

import (
	"slices"

	"github.com/spate-go/coordination"
)

// CoordinatorScript drives and observes the [ScriptedCoordinator] it was
// built with by [NewScripted]. It queues events, scripts per-split outcomes,
// and reports what the code under test did. It is safe for concurrent use.
type CoordinatorScript struct {
	st *scriptState
}

// FailRecord is one call of ScriptedCoordinator.Fail.
type FailRecord struct {
	// Split is the split reported as failed.
	Split coordination.SplitID
	// Epoch is the tenancy epoch the caller passed.
	Epoch coordination.LeaseEpoch
	// Reason is the caller's reason text.
	Reason string
}

// enqueue appends ev and wakes the waker, if one was set. The wake happens
// after the event is visible to Poll.
func (s *CoordinatorScript) enqueue(ev coordination.Event) {
	s.st.mu.Lock()
	s.st.queue = append(s.st.queue, ev)
	w := s.st.waker
	s.st.mu.Unlock()
	if w != nil {
		w.Wake()
	}
}

// Gain queues a Gained event for spec under epoch with progress p (nil for
// none; p is copied) and wakes the waker.
func (s *CoordinatorScript) Gain(spec coordination.SplitSpec, epoch coordination.LeaseEpoch, p *coordination.SplitProgress) {
	spec.Descriptor = slices.Clone(spec.Descriptor)
	s.st.mu.Lock()
	s.st.epochs[spec.ID] = epoch
	s.st.mu.Unlock()
	var progress *coordination.SplitProgress
	if p != nil {
		cp := cloneProgress(*p)
		progress = &cp
	}
	s.enqueue(coordination.Gained{Split: spec, Epoch: epoch, Progress: progress})
}

// Lose queues a Lost event for id and wakes the waker.
func (s *CoordinatorScript) Lose(id coordination.SplitID) {
	s.enqueue(coordination.Lost{Split: id})
}

// Revoke queues a RevokeRequested event for id and wakes the waker.
func (s *CoordinatorScript) Revoke(id coordination.SplitID) {
	s.enqueue(coordination.RevokeRequested{Split: id})
}

// Quarantine queues a Quarantined event for id and wakes the waker.
func (s *CoordinatorScript) Quarantine(id coordination.SplitID, attempts uint32) {
	s.enqueue(coordination.Quarantined{Split: id, Attempts: attempts})
}

// AllComplete queues an AllComplete event and wakes the waker.
func (s *CoordinatorScript) AllComplete() {
	s.enqueue(coordination.AllComplete{})
}

// Stalled queues a Stalled event with the given counts and wakes the waker.
func (s *CoordinatorScript) Stalled(completed, quarantined uint64) {
	s.enqueue(coordination.Stalled{Completed: completed, Quarantined: quarantined})
}

// FailNextCommit pushes kind onto id's commit-outcome queue: the next Commit
// of id, or CommitFinal entry for it, that finds this outcome first in line
// returns &coordination.Error{Kind: kind, Reason: "scripted <kind> for split
// <id>"} and is not recorded.
func (s *CoordinatorScript) FailNextCommit(id coordination.SplitID, kind coordination.ErrorKind) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.commitOutcomes[id] = append(s.st.commitOutcomes[id], kind)
}

// FailNextFail pushes kind onto id's fail-outcome queue: the next Fail of id
// that finds this outcome first in line returns &coordination.Error{Kind:
// kind, Reason: "scripted <kind> for split <id>"}. The call is still
// recorded by Failed.
func (s *CoordinatorScript) FailNextFail(id coordination.SplitID, kind coordination.ErrorKind) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.failOutcomes[id] = append(s.st.failOutcomes[id], kind)
}

// Commits returns the successful Commit calls, in call order. Failed commits
// and CommitFinal entries are not included.
func (s *CoordinatorScript) Commits() []coordination.Commit {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	out := make([]coordination.Commit, len(s.st.commits))
	for i, c := range s.st.commits {
		out[i] = coordination.Commit{Split: c.Split, Progress: cloneProgress(c.Progress)}
	}
	return out
}

// FinalCommits returns one batch per CommitFinal call, each holding that
// call's successful entries in entry order (empty when every entry failed).
func (s *CoordinatorScript) FinalCommits() [][]coordination.Commit {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	out := make([][]coordination.Commit, len(s.st.finalCommits))
	for i, batch := range s.st.finalCommits {
		out[i] = make([]coordination.Commit, len(batch))
		for j, c := range batch {
			out[i][j] = coordination.Commit{Split: c.Split, Progress: cloneProgress(c.Progress)}
		}
	}
	return out
}

// Failed returns every Fail call made after Start and before Depart, in call
// order, including the ones a scripted outcome refused.
func (s *CoordinatorScript) Failed() []FailRecord {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return slices.Clone(s.st.failed)
}

// Released returns the split ids passed to Release, in call order.
func (s *CoordinatorScript) Released() []coordination.SplitID { return s.ids(&s.st.released) }

// ReleasedDrained returns the split ids passed to ReleaseDrained, in call
// order.
func (s *CoordinatorScript) ReleasedDrained() []coordination.SplitID {
	return s.ids(&s.st.releasedDrained)
}

// Declined returns the split ids passed to DeclineRevoke, in call order.
func (s *CoordinatorScript) Declined() []coordination.SplitID { return s.ids(&s.st.declined) }

// ids returns a copy of the recorded id list *list.
func (s *CoordinatorScript) ids(list *[]coordination.SplitID) []coordination.SplitID {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return slices.Clone(*list)
}

// Departed reports whether Depart was called.
func (s *CoordinatorScript) Departed() bool {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.departed
}

// DepartedWith returns the split ids the first Depart was given, in the
// order given (nil before Depart).
func (s *CoordinatorScript) DepartedWith() []coordination.SplitID { return s.ids(&s.st.departedWith) }

// Started reports whether Start succeeded.
func (s *CoordinatorScript) Started() bool {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.started
}

// TakePlanner returns the planner passed to Start the first time it is
// called after Start, and nil before Start and on every later call.
func (s *CoordinatorScript) TakePlanner() coordination.Planner {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	p := s.st.planner
	s.st.planner = nil
	return p
}
