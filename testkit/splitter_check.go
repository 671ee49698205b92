package testkit

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
)

// SplittableSource is what [CheckSplitter] needs of a source under test: a
// way to build fresh instances of it and to see what each delivered.
type SplittableSource struct {
	// Split is a split of the source with enough records left to be cut
	// once its lane has read a little.
	Split coordination.SplitSpec
	// New returns a fresh instance of the source, which must implement
	// driver.Splitter, and a function that returns the keys of the records
	// its lanes delivered so far (acknowledged or not), in any order. Each
	// call must return an instance sharing nothing with the earlier ones
	// but the data it reads.
	New func(t testing.TB) (driver.SourceReader, func() []string)
	// Keep is the share the cut asks the primary to keep; 0 means 0.5.
	Keep float64
}

// checkTimeout bounds each read CheckSplitter waits for.
const checkTimeout = 30 * time.Second

// CheckSplitter is the conformance check of a splittable source
// (driver.Splitter; docs/protocol.md, "Runtime split"). Through a real
// driver over a scripted coordinator it reads s.Split whole, uncut, with
// one instance; with a second it reads the split until the lane has
// delivered something, cuts it, and reads the lane to its end; with a third
// it reads the residual from its start; with a fourth it reads the primary
// from its start. It fails unless the cut was made (ok, no error),
// Remaining reported work before the cut, the primary and the residual are
// disjoint and together exactly the split's records, the cut lane
// delivered exactly the primary's records, and the residual is readable
// from its start with no resume progress.
func CheckSplitter(t testing.TB, s SplittableSource) {
	t.Helper()
	keep := s.Keep
	if keep == 0 {
		keep = 0.5
	}
	whole := readSplit(t, s, s.Split, nil)

	src, delivered := s.New(t)
	sp, ok := src.(driver.Splitter)
	if !ok {
		t.Fatalf("CheckSplitter: the source %T does not implement driver.Splitter", src)
	}
	sc, script := NewScripted()
	d := driver.New(sc, src)
	if err := d.Start(splitterPlanner{}); err != nil {
		t.Fatalf("CheckSplitter: Start: %v", err)
	}
	script.Gain(s.Split, 1, nil)
	lane := waitLanes(t, d, src)
	waitFor(t, "the lane's first delivery", func() bool { _, _ = d.PollEvents(5 * time.Millisecond); return len(delivered()) > 0 })
	if r := sp.Remaining(lane.ID); r == 0 {
		t.Errorf("CheckSplitter: Remaining of a lane with records left is 0")
	}
	script.RequestCut(s.Split.ID, 1, keep, 1)
	if _, err := d.PollEvents(0); err != nil {
		t.Fatalf("CheckSplitter: PollEvents: %v", err)
	}
	n, err := d.Cut(src.Acked())
	if err != nil || n != 1 {
		t.Fatalf("CheckSplitter: cutting the lane = %d cuts, %v; want the source to cut it (TrySplit ok)", n, err)
	}
	readLaneToEnd(t, d, src)
	kept := keysOf(t, "the cut lane", delivered())
	cut := script.Cuts()[0]
	_ = d.Shutdown(nil)

	residual := readSplit(t, s, coordination.SplitSpec{ID: cut.Residual, Descriptor: cut.Cut.Residual, Weight: cut.Cut.ResidualWeight}, nil)
	primary := readSplit(t, s, coordination.SplitSpec{ID: s.Split.ID, Descriptor: cut.Cut.Primary, Weight: s.Split.Weight}, nil)

	if !slices.Equal(kept, primary) {
		t.Errorf("CheckSplitter: the cut lane delivered %d records, the primary read from its start %d: they must be the same records (first differences: %v)", len(kept), len(primary), firstDiff(kept, primary))
	}
	if both := intersect(primary, residual); len(both) > 0 {
		t.Errorf("CheckSplitter: %d records are in both the primary and the residual, e.g. %v", len(both), both[:min(3, len(both))])
	}
	if union := sortedUnion(primary, residual); !slices.Equal(union, whole) {
		t.Errorf("CheckSplitter: primary (%d) + residual (%d) records != the split's %d records (first differences: %v)", len(primary), len(residual), len(whole), firstDiff(union, whole))
	}
	if len(residual) == 0 {
		t.Errorf("CheckSplitter: the residual holds no records; a source must refuse a cut that leaves nothing (!ok)")
	}
}

// readSplit reads spec with a fresh instance of the source, from resume,
// to its end, and returns the sorted keys it delivered.
func readSplit(t testing.TB, s SplittableSource, spec coordination.SplitSpec, resume *coordination.SplitProgress) []string {
	t.Helper()
	src, delivered := s.New(t)
	sc, script := NewScripted()
	d := driver.New(sc, src)
	if err := d.Start(splitterPlanner{}); err != nil {
		t.Fatalf("CheckSplitter: Start: %v", err)
	}
	script.Gain(spec, 1, resume)
	waitLanes(t, d, src)
	readLaneToEnd(t, d, src)
	_ = d.Shutdown(nil)
	return keysOf(t, "split "+string(spec.ID), delivered())
}

// waitLanes polls d until a lane opens, starts it and returns it.
func waitLanes(t testing.TB, d *driver.Driver, r driver.Reader) driver.Lane {
	t.Helper()
	var lane driver.Lane
	waitFor(t, "the lane to open", func() bool {
		ev, err := d.PollEvents(10 * time.Millisecond)
		if err != nil {
			t.Fatalf("CheckSplitter: PollEvents: %v", err)
		}
		if added, ok := ev.(driver.LanesAdded); ok {
			r.StartLanes(added.Lanes)
			lane = added.Lanes[0]
			return true
		}
		return false
	})
	return lane
}

// readLaneToEnd polls d, committing at each end of input, until the lane
// retires completed.
func readLaneToEnd(t testing.TB, d *driver.Driver, r driver.Reader) {
	t.Helper()
	waitFor(t, "the lane to read to its end", func() bool {
		ev, err := d.PollEvents(10 * time.Millisecond)
		if err != nil {
			t.Fatalf("CheckSplitter: PollEvents: %v", err)
		}
		switch ev := ev.(type) {
		case driver.CommitReady:
			if err := d.Commit(r.Acked()); err != nil {
				t.Fatalf("CheckSplitter: Commit: %v", err)
			}
		case driver.LanesRetired:
			r.StopLanes(ev.Lanes)
			return true
		case driver.LanesRevoked:
			t.Fatalf("CheckSplitter: the lane was revoked")
		}
		return false
	})
}

// waitFor calls cond until it holds or checkTimeout passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(checkTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("CheckSplitter: timed out waiting for %s", what)
		}
	}
}

// keysOf sorts keys and fails on a key delivered twice.
func keysOf(t testing.TB, what string, keys []string) []string {
	t.Helper()
	keys = slices.Clone(keys)
	slices.Sort(keys)
	for i := 1; i < len(keys); i++ {
		if keys[i] == keys[i-1] {
			t.Fatalf("CheckSplitter: %s delivered record %q twice", what, keys[i])
		}
	}
	return keys
}

func intersect(a, b []string) []string {
	var out []string
	for _, k := range a {
		if _, ok := slices.BinarySearch(b, k); ok {
			out = append(out, k)
		}
	}
	return out
}

func sortedUnion(a, b []string) []string {
	u := slices.Concat(a, b)
	slices.Sort(u)
	return slices.Compact(u)
}

// firstDiff returns up to three keys in one list and not the other.
func firstDiff(a, b []string) []string {
	var out []string
	for _, k := range a {
		if _, ok := slices.BinarySearch(b, k); !ok && len(out) < 3 {
			out = append(out, "+"+k)
		}
	}
	for _, k := range b {
		if _, ok := slices.BinarySearch(a, k); !ok && len(out) < 6 {
			out = append(out, "-"+k)
		}
	}
	return out
}

// splitterPlanner is the planner CheckSplitter starts its drivers with; a
// scripted coordinator never runs it.
type splitterPlanner struct{}

func (splitterPlanner) Fingerprint() string { return "testkit-check-splitter" }

func (splitterPlanner) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	return coordination.SplitPlan{Finality: coordination.PlanFinal}, nil
}
