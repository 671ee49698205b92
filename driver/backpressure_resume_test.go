package driver

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/spate-go/coordination"
)

// ackedReader is a Reader and Pauser whose lanes acknowledged the given
// watermarks; it records the lanes resumed.
type ackedReader struct {
	acked   []Watermark
	resumed []LaneID
}

func (r *ackedReader) StartLanes([]Lane)          {}
func (r *ackedReader) StopLanes([]LaneID)         {}
func (r *ackedReader) Acked() []Watermark         { return r.acked }
func (r *ackedReader) PauseLanes([]LaneID)        {}
func (r *ackedReader) ResumeLanes(lanes []LaneID) { r.resumed = append(r.resumed, lanes...) }

// TestAPausedLaneWhoseProgressLandedElsewhereResumes: a lane paused because
// its commits did not land, whose acknowledged progress then landed outside
// a commit round (a cut commits it: Driver.Cut), is resumed by the next round
// although that round has nothing of it to commit. Before, it stayed paused
// for ever: a paused lane acknowledges nothing new, so no round carried it.
func TestAPausedLaneWhoseProgressLandedElsewhereResumes(t *testing.T) {
	const part, lane = PartitionID(1), LaneID(7)
	landedAt := &coordination.SplitProgress{Watermark: 10}
	ten := &tenancy{spec: coordination.SplitSpec{ID: "s"}, partition: part, lane: lane, opened: true, progress: landedAt, landed: landedAt}
	d := &Driver{log: slog.New(slog.DiscardHandler), parts: map[PartitionID]*tenancy{part: ten}, held: map[coordination.SplitID]*tenancy{"s": ten}}
	for _, tc := range []struct {
		name     string
		acked    []Watermark
		deferred bool
		want     []LaneID
	}{
		{"acked progress landed", []Watermark{{Partition: part, Value: 10}}, false, []LaneID{lane}},
		{"nothing acknowledged", nil, false, []LaneID{lane}},
		{"landed progress only deferred", []Watermark{{Partition: part, Value: 10}}, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ten.deferred = tc.deferred
			r := &ackedReader{acked: tc.acked}
			b := newBacklog(r, time.Second)
			b.lags[part] = &lag{since: time.Now().Add(-time.Hour), paused: true}
			l := &loop{d: d, r: r, backlog: b}
			if tc.deferred { // the round commits a deferred progress again: not landed elsewhere
				if got := l.landedElsewhere(nil, []Watermark{{Partition: part, Value: 10}}); got != nil {
					t.Fatalf("landedElsewhere = %v for a deferred lane, want none", got)
				}
				return
			}
			if err := l.commit(nil); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.resumed, tc.want) {
				t.Fatalf("resumed %v, want %v", r.resumed, tc.want)
			}
			if _, lagging := b.lags[part]; lagging {
				t.Fatal("the lane still counts as lagging")
			}
		})
	}
}
