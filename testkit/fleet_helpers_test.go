package testkit

import (
	"errors"
	"testing"
	"time"

	"github.com/spate-go/coordination"
)

const jobFP = "job:v1"

// lease is the harness LeaseDuration.
var lease = HarnessConfig().LeaseDuration

func ids(ps []coordination.PlannedSplit) []coordination.SplitID {
	out := make([]coordination.SplitID, len(ps))
	for i, p := range ps {
		out[i] = p.Spec.ID
	}
	return out
}

// untilCommitted runs the fleet until m has committed each of splits.
func untilCommitted(f *Fleet, m *Member, splits []coordination.SplitID) {
	f.Until(m.ID()+" committed every split", func() bool {
		for _, s := range splits {
			if h, ok := m.Tenancy(s); !ok || h.Committed == nil {
				return false
			}
		}
		return true
	})
}

// newJob returns the ids of n weight-1 splits and a planner for them.
func newJob(n int) ([]coordination.SplitID, *TestPlanner) {
	ps := Splits(n)
	return ids(ps), NewTestPlanner(jobFP, ps...)
}

// allHeld returns whether every split is held by exactly one live member
// and by member by when by is non-empty.
func allHeld(f *Fleet, splits []coordination.SplitID, by string) bool {
	for _, s := range splits {
		h := f.Holders(s)
		if len(h) != 1 || (by != "" && h[0] != by) {
			return false
		}
	}
	return true
}

func setMaxInFlight(n int) func(*coordination.Config) {
	return func(c *coordination.Config) { c.MaxInFlight = n }
}

func setDrainDeadline(d time.Duration) func(*coordination.Config) {
	return func(c *coordination.Config) { c.DrainDeadline = d }
}

// countGains counts Gained events of split across every member's log.
func countGains(f *Fleet, split coordination.SplitID) int {
	n := 0
	for _, m := range f.Members() {
		for _, ev := range m.Log() {
			if g, ok := ev.(coordination.Gained); ok && g.Split.ID == split {
				n++
			}
		}
	}
	return n
}

// lostSplits returns the splits member m emitted Lost for.
func lostSplits(m *Member) map[coordination.SplitID]int {
	out := make(map[coordination.SplitID]int)
	for _, ev := range m.Log() {
		if l, ok := ev.(coordination.Lost); ok {
			out[l.Split]++
		}
	}
	return out
}

func wantKind(t testing.TB, what string, err error, kind coordination.ErrorKind) {
	t.Helper()
	if coordination.KindOf(err) != kind {
		t.Fatalf("%s: err = %v, want kind %v", what, err, kind)
	}
}

func wantReason(t testing.TB, what string, err error, kind coordination.ErrorKind, reason string) {
	t.Helper()
	var ce *coordination.Error
	if !errors.As(err, &ce) || ce.Kind != kind || ce.Reason != reason {
		t.Fatalf("%s: err = %v, want %v %q", what, err, kind, reason)
	}
}

// checkRevocationAccounting checks SPEC §20.4 on every live member:
// requested = drained + forced + cancelled + live entries, where the
// splits_draining gauge counts the entries (cancelled ones included) and
// cancelled entries are counted in both cancelled and the gauge.
func checkRevocationAccounting(t fatalfer, f *Fleet) {
	t.Helper()
	for _, m := range f.Live() {
		req := m.Metric("revocations_total", "outcome", "requested")
		dr := m.Metric("revocations_total", "outcome", "drained")
		fo := m.Metric("revocations_total", "outcome", "forced")
		ca := m.Metric("revocations_total", "outcome", "cancelled")
		live := m.Metric("splits_draining")
		if req < dr+fo+ca || req > dr+fo+ca+live {
			t.Fatalf("%s: revocations requested %v, drained %v, forced %v, cancelled %v, draining %v: want requested = drained + forced + cancelled + live entries",
				m.ID(), req, dr, fo, ca, live)
		}
	}
}

// fatalfer is the part of testing.TB the fleet check helpers need.
type fatalfer interface {
	Helper()
	Fatalf(format string, args ...any)
}
