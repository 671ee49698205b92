package testkit

import (
	"github.com/spate-go/coordination"
)

// Work says what a member does with each split it gains, once per tenancy.
type Work int

const (
	// WorkHold holds gained splits and commits nothing.
	WorkHold Work = iota
	// WorkCommit commits each gained split once at max(carried+1, 1) and
	// keeps holding it.
	WorkCommit
	// WorkComplete commits each gained split once at max(carried+1, 1) with
	// Completed set, ending the tenancy.
	WorkComplete
	// WorkStream commits every held split once per clock step, one past its cut,
	// like a source that keeps acknowledging records.
	WorkStream
)

// Revoke says how a member answers RevokeRequested.
type Revoke int

const (
	// RevokeConsent drains: it commits the current cut plus one and calls
	// ReleaseDrained.
	RevokeConsent Revoke = iota
	// RevokeDecline calls DeclineRevoke.
	RevokeDecline
	// RevokeIgnore does nothing and keeps working the split; the revocation
	// is forced at its deadline (or, if cancelled, kept).
	RevokeIgnore
)

// Policy decides, on every pump, what a member does with what it holds. The
// zero Policy holds gained splits, commits nothing and consents to
// revocations. Set it on [Member.Policy] at any time.
type Policy struct {
	Work   Work
	Revoke Revoke
	// FailSplits are failed (Fail under the held epoch) whenever gained.
	FailSplits map[coordination.SplitID]bool
	// Cut acts on CutRequested for ranged splits ([RangeDescriptor]): the
	// member reports their remaining records and cuts them as asked.
	Cut bool
	// ExpectFatal stops the fleet from failing the test when a call returns
	// Fatal (for tests that provoke one).
	ExpectFatal bool
}

// next returns the progress one step past the tenancy's cut.
func next(h *Held, completed bool) coordination.SplitProgress {
	w := int64(1)
	if c := h.Cut(); c != nil && c.Watermark+1 > w {
		w = c.Watermark + 1
	}
	return coordination.SplitProgress{Watermark: w, Completed: completed}
}

// applyPolicy runs the member's policy over its held splits and reports
// whether it made any call.
func (m *Member) applyPolicy() bool {
	if m.err != nil || !m.Alive() {
		return false
	}
	acted := false
	for _, id := range m.HeldIDs() {
		h := m.held[id]
		if h == nil {
			continue
		}
		if m.cutStep(id, h) {
			acted = true
			continue
		}
		if m.Policy.FailSplits[id] {
			_ = m.Fail(id, "testkit policy: poison")
			acted = true
			continue
		}
		if h.Revoked && !(h.revokeActed && h.revokeActedWith == m.Policy.Revoke) {
			h.revokeActed, h.revokeActedWith = true, m.Policy.Revoke
			switch m.Policy.Revoke {
			case RevokeConsent:
				acted = true
				err := m.Commit(id, next(h, false))
				if err == nil {
					err = m.ReleaseDrained(id)
				}
				if coordination.KindOf(err) == coordination.Retryable && m.Holds(id) {
					h.revokeActed = false // try again on a later pump
				}
				continue
			case RevokeDecline:
				acted = true
				// A live revocation is forced (Lost follows); a cancelled one
				// is dropped and the split stays held, no longer revoked.
				h.Revoked = false
				_ = m.DeclineRevoke(id)
				continue
			}
		}
		if m.Policy.Work == WorkStream {
			if h.streamedAt != m.f.steps {
				h.streamedAt = m.f.steps
				_ = m.Commit(id, next(h, false))
			}
			continue
		}
		if (h.worked && h.workedWith == m.Policy.Work) || h.triedAt == m.f.steps+1 {
			continue
		}
		var err error
		switch m.Policy.Work {
		case WorkCommit:
			err = m.Commit(id, next(h, false))
		case WorkComplete:
			err = m.Commit(id, next(h, true))
		default:
			continue
		}
		acted = true
		if coordination.KindOf(err) == coordination.Retryable {
			h.triedAt = m.f.steps + 1 // try again after the next clock step
			continue
		}
		h.worked, h.workedWith = true, m.Policy.Work
	}
	return acted
}
