package testkit

import (
	"bytes"
	"slices"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

// CutRecord is one successful ScriptedCoordinator.CommitCut call.
type CutRecord struct {
	// Split is the split that was cut.
	Split coordination.SplitID
	// Progress is the progress committed with the cut.
	Progress coordination.SplitProgress
	// Cut is the cut as the caller passed it.
	Cut coordination.Cut
	// Residual is the residual id CommitCut returned.
	Residual coordination.SplitID
}

// Estimate is the last ScriptedCoordinator.ReportRemaining call of a split.
type Estimate struct {
	// Epoch is the tenancy epoch the caller passed.
	Epoch coordination.LeaseEpoch
	// Remaining is the estimate it reported.
	Remaining uint64
}

// ReportRemaining records the estimate as the split's latest; 0 removes it.
// Like a real coordinator it never fails; before Start and after Depart it
// records nothing.
func (c *ScriptedCoordinator) ReportRemaining(split coordination.SplitID, epoch coordination.LeaseEpoch, remaining uint64) {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	if c.st.usable() != nil {
		return
	}
	if remaining == 0 {
		delete(c.st.remaining, split)
		return
	}
	c.st.remaining[split] = Estimate{Epoch: epoch, Remaining: remaining}
}

// CommitCut pops the split's next scripted cut outcome and returns it as an
// error, or records the cut and returns the residual id a real coordinator
// would derive (docs/protocol.md, "Residual ids"), from the epoch of the
// split's last scripted Gain and the number of cuts of the split recorded
// so far. A completed progress is refused with Fatal, and a residual
// byte-equal to its primary with an error matching
// coordination.ErrCutRefused, as by a real coordinator. Failed calls are
// not recorded.
func (c *ScriptedCoordinator) CommitCut(split coordination.SplitID, progress coordination.SplitProgress, cut coordination.Cut) (coordination.SplitID, error) {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	if err := c.st.usable(); err != nil {
		return "", err
	}
	if progress.Completed {
		return "", &coordination.Error{Kind: coordination.Fatal, Reason: "CommitCut of split " + string(split) + " with completed progress: a split completes only after its residual exists"}
	}
	if kind, ok := pop(c.st.cutOutcomes, split); ok {
		return "", scripted(kind, split)
	}
	if bytes.Equal(cut.Primary, cut.Residual) {
		return "", &coordination.Error{Kind: coordination.Retryable, Err: coordination.ErrCutRefused,
			Reason: "split " + string(split) + ": cut refused, nothing written: its residual descriptor is byte-equal to its primary"}
	}
	c.st.counters[split]++
	residual := protocol.ResidualID(split, uint64(max(c.st.epochs[split], 1)), c.st.counters[split])
	c.st.cuts = append(c.st.cuts, CutRecord{Split: split, Progress: cloneProgress(progress), Cut: cloneCut(cut), Residual: residual})
	return residual, nil
}

// RequestCut queues a CutRequested event for the split's tenancy of epoch,
// asking for parts residuals (0 counts as 1) with the primary keeping keep
// of what remains, and wakes the waker.
func (s *CoordinatorScript) RequestCut(id coordination.SplitID, epoch coordination.LeaseEpoch, keep float64, parts int) {
	s.enqueue(coordination.CutRequested{Split: id, Epoch: epoch, Keep: keep, Parts: parts})
}

// FailNextCommitCut scripts the outcome of the split's next CommitCut: an
// error of kind. Outcomes queue per split, in order.
func (s *CoordinatorScript) FailNextCommitCut(id coordination.SplitID, kind coordination.ErrorKind) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.cutOutcomes[id] = append(s.st.cutOutcomes[id], kind)
}

// Cuts returns the successful CommitCut calls, in call order.
func (s *CoordinatorScript) Cuts() []CutRecord {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	out := make([]CutRecord, len(s.st.cuts))
	for i, r := range s.st.cuts {
		r.Progress, r.Cut = cloneProgress(r.Progress), cloneCut(r.Cut)
		out[i] = r
	}
	return out
}

// Remaining returns the latest estimate reported for id, if one stands.
func (s *CoordinatorScript) Remaining(id coordination.SplitID) (Estimate, bool) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	e, ok := s.st.remaining[id]
	return e, ok
}

func cloneCut(c coordination.Cut) coordination.Cut {
	c.Primary, c.Residual = slices.Clone(c.Primary), slices.Clone(c.Residual)
	return c
}
