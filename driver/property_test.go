package driver_test

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/testkit"
)

// strictSource wraps recSource and records every call that breaks the
// Source contract the driver promises (§29.2): OpenSplit only for a closed
// split, EncodeCommit and DrainReady only for an open one, nothing for a
// split after its CloseSplit until it is opened again.
type strictSource struct {
	*recSource
	open       map[coordination.SplitID]bool
	violations []string
}

func (s *strictSource) bad(format string, args ...any) {
	s.violations = append(s.violations, fmt.Sprintf(format, args...))
}

func (s *strictSource) OpenSplit(o driver.Opening) error {
	if s.open[o.Split.ID] {
		s.bad("OpenSplit(%s) while its previous lane is open", o.Split.ID)
	}
	s.open[o.Split.ID] = true
	return s.recSource.OpenSplit(o)
}

func (s *strictSource) EncodeCommit(id coordination.SplitID, w int64) (coordination.SplitProgress, error) {
	if !s.open[id] {
		s.bad("EncodeCommit(%s) for a split without an open lane", id)
	}
	return s.recSource.EncodeCommit(id, w)
}

func (s *strictSource) DrainReady(id coordination.SplitID) (*coordination.SplitProgress, error) {
	if !s.open[id] {
		s.bad("DrainReady(%s) for a split without an open lane", id)
	}
	return s.recSource.DrainReady(id)
}

func (s *strictSource) BeginRevoke(id coordination.SplitID) bool {
	if !s.open[id] {
		s.bad("BeginRevoke(%s) for a split without an open lane", id)
	}
	return s.recSource.BeginRevoke(id)
}

func (s *strictSource) CloseSplit(id coordination.SplitID) {
	s.open[id] = false
	s.recSource.CloseSplit(id)
}

// TestPropertyLanesAndTenanciesStayConsistent drives the driver with random
// coordinator events, source answers, commits and poison reports, then shuts
// it down, and checks the lane and tenancy bookkeeping: every lane is
// announced once and ended at most once, after its announcement; every
// tenancy is closed exactly once; the source is never asked about a split
// without an open lane; Depart is called once with sorted ids.
func TestPropertyLanesAndTenanciesStayConsistent(t *testing.T) {
	splits := ids("s0", "s1", "s2", "s3")
	kinds := []coordination.ErrorKind{coordination.Retryable, coordination.Fenced}
	rapid.Check(t, func(rt *rapid.T) {
		sc, script := testkit.NewScripted()
		src := &strictSource{recSource: newSource(), open: map[coordination.SplitID]bool{}}
		d := driver.New(sc, src)
		if err := d.Start(planner{}); err != nil {
			rt.Fatal(err)
		}
		epochs := map[coordination.SplitID]coordination.LeaseEpoch{}
		gains := map[coordination.SplitID]int{}
		announced := map[driver.LaneID]driver.Lane{}
		ended := map[driver.LaneID]bool{}
		var live []driver.Lane // announced and not ended, for picking watermarks

		end := func(kind string, lanes []driver.LaneID) {
			for _, id := range lanes {
				if _, ok := announced[id]; !ok {
					rt.Fatalf("%s for lane %d that was never announced", kind, id)
				}
				if ended[id] {
					rt.Fatalf("%s for lane %d that already ended", kind, id)
				}
				ended[id] = true
				live = slices.DeleteFunc(live, func(l driver.Lane) bool { return l.ID == id })
			}
		}

		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for step := range steps + 10 {
			id := rapid.SampledFrom(splits).Draw(rt, "split")
			op := 11 // the last ten steps only poll, so every queued event is applied
			if step < steps {
				op = rapid.IntRange(0, 11).Draw(rt, "op")
			}
			switch op {
			case 0, 1:
				epochs[id]++
				gains[id]++
				var p *coordination.SplitProgress
				if rapid.Bool().Draw(rt, "carried") {
					p = progress(rapid.Int64Range(0, 50).Draw(rt, "carried watermark"))
				}
				script.Gain(spec(id), epochs[id], p)
			case 2:
				script.Lose(id)
			case 3:
				script.Revoke(id)
			case 4:
				script.Quarantine(id, 4)
			case 5:
				src.acceptRev[id] = rapid.Bool().Draw(rt, "accept revoke")
				if rapid.Bool().Draw(rt, "cut ready") {
					src.drainCut[id] = progress(rapid.Int64Range(0, 100).Draw(rt, "cut"))
				} else {
					delete(src.drainCut, id)
				}
			case 6:
				if rapid.Bool().Draw(rt, "sweep complete") {
					src.sweep[id] = completed(100)
				} else {
					delete(src.sweep, id)
				}
			case 7:
				script.FailNextCommit(id, rapid.SampledFrom(kinds).Draw(rt, "commit outcome"))
			case 8:
				if len(live) == 0 {
					continue
				}
				l := rapid.SampledFrom(live).Draw(rt, "lane")
				if rapid.Bool().Draw(rt, "complete") {
					src.completeAt[l.Split.ID] = 0
				} else {
					delete(src.completeAt, l.Split.ID)
				}
				if err := d.Commit([]driver.Watermark{{Partition: l.Partition, Value: rapid.Int64Range(0, 100).Draw(rt, "w")}}); err != nil {
					rt.Fatalf("Commit: %v", err)
				}
			case 9:
				if err := d.Fail(id, "poison"); err != nil {
					rt.Fatalf("Fail: %v", err)
				}
			default:
				ev, err := d.PollEvents(0)
				if err != nil {
					rt.Fatalf("PollEvents: %v", err)
				}
				switch ev := ev.(type) {
				case driver.LanesAdded:
					for _, l := range ev.Lanes {
						if _, dup := announced[l.ID]; dup {
							rt.Fatalf("lane %d announced twice", l.ID)
						}
						announced[l.ID] = l
						live = append(live, l)
					}
				case driver.LanesRevoked:
					end("LanesRevoked", ev.Lanes)
				case driver.LanesRetired:
					end("LanesRetired", ev.Lanes)
				case nil:
					rt.Fatal("PollEvents returned a nil event and no error")
				}
			}
		}
		if ev, _ := d.PollEvents(0); ev != (driver.Idle{}) {
			rt.Fatalf("PollEvents after the final polls = %#v, want Idle", ev)
		}
		// A scripted Retryable outcome still queued fails its final entry;
		// that is the only failure Shutdown may report here.
		if err := d.Shutdown(nil); err != nil && coordination.KindOf(err) != coordination.Retryable {
			rt.Fatalf("Shutdown: %v", err)
		}
		if v := src.violations; len(v) > 0 {
			rt.Fatalf("source contract broken: %v", v)
		}
		for _, id := range splits {
			if got, want := src.count("CloseSplit", id), gains[id]; got != want {
				rt.Fatalf("CloseSplit(%s) called %d times for %d tenancies", id, got, want)
			}
		}
		if !script.Departed() || !slices.IsSorted(script.DepartedWith()) {
			rt.Fatalf("Departed = %v with %v, want true with sorted ids", script.Departed(), script.DepartedWith())
		}
	})
}
