package driver

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
)

// TestBacklogRules checks the backlog's pure rules on random lags: a round
// tries landing partitions first (by partition) and lagging ones least
// recently tried first; overdue pauses exactly the unpaused lags whose
// window has passed; due is the earliest window end of an unpaused lag.
func TestBacklogRules(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		at := func(label string) time.Time {
			return epoch.Add(time.Duration(rapid.IntRange(0, 20).Draw(t, label)) * 100 * time.Millisecond)
		}
		b := &backlog{after: time.Duration(rapid.IntRange(1, 10).Draw(t, "after")) * 100 * time.Millisecond, lags: map[PartitionID]*lag{}}
		parts := rapid.SliceOfNDistinct(rapid.Uint64Range(1, 30), 0, 12, rapid.ID).Draw(t, "parts")
		var ws []Watermark
		for _, p := range parts {
			ws = append(ws, Watermark{Partition: PartitionID(p)})
			if rapid.Bool().Draw(t, "lagging") {
				b.lags[PartitionID(p)] = &lag{since: at("since"), tried: at("tried"), paused: rapid.Bool().Draw(t, "paused")}
			}
		}
		b.order(ws)
		for i := 1; i < len(ws); i++ {
			x, y := ws[i-1].Partition, ws[i].Partition
			lx, ly := b.lags[x], b.lags[y]
			switch {
			case lx != nil && ly == nil:
				t.Fatalf("lagging %d ordered before landing %d", x, y)
			case lx == nil && ly == nil && x > y:
				t.Fatalf("landing %d ordered before landing %d", x, y)
			case lx != nil && ly != nil && lx.tried.After(ly.tried):
				t.Fatalf("%d (tried %v) ordered before %d (tried %v)", x, lx.tried, y, ly.tried)
			}
		}

		var wantDue time.Time
		for _, l := range b.lags {
			if end := l.since.Add(b.after); !l.paused && (wantDue.IsZero() || end.Before(wantDue)) {
				wantDue = end
			}
		}
		if got := b.due(); !got.Equal(wantDue) {
			t.Fatalf("due = %v, want %v", got, wantDue)
		}

		now := at("now")
		var want []PartitionID
		wasPaused := map[PartitionID]bool{}
		for p, l := range b.lags {
			wasPaused[p] = l.paused
			if !l.paused && !now.Before(l.since.Add(b.after)) {
				want = append(want, p)
			}
		}
		slices.Sort(want)
		if got := b.overdue(now); !slices.Equal(got, want) {
			t.Fatalf("overdue(%v) = %v, want %v", now, got, want)
		}
		for p, l := range b.lags {
			if l.paused != (wasPaused[p] || slices.Contains(want, p)) {
				t.Fatalf("partition %d paused = %v after overdue", p, l.paused)
			}
		}
	})
}

// pausedReader is a Reader and Pauser with fixed acknowledged watermarks
// that records the lanes it was asked to resume.
type pausedReader struct {
	acked   []Watermark
	resumed []LaneID
}

func (r *pausedReader) StartLanes([]Lane)          {}
func (r *pausedReader) StopLanes([]LaneID)         {}
func (r *pausedReader) Acked() []Watermark         { return r.acked }
func (r *pausedReader) PauseLanes([]LaneID)        {}
func (r *pausedReader) ResumeLanes(lanes []LaneID) { r.resumed = append(r.resumed, lanes...) }

// A paused lane whose acknowledged watermark another commit already landed
// (a cut's CommitCut carries it) is resumed by the next commit round, which
// has nothing to commit for it. Before, the round skipped the lane as
// committed and its lag stayed: the lane's next claim waited for a commit
// that never came (an exactly-once copy of 1M rows hung on it under load).
func TestCommitResumesALaneAnotherCommitLanded(t *testing.T) {
	r := &pausedReader{acked: []Watermark{{Partition: 1, Value: 40}}}
	d := &Driver{log: slog.New(slog.DiscardHandler), parts: map[PartitionID]*tenancy{
		1: {partition: 1, lane: 7, opened: true, phase: live, progress: &coordination.SplitProgress{Watermark: 40}},
	}}
	l := &loop{d: d, r: r, backlog: newBacklog(r, time.Second)}
	l.backlog.lags[1] = &lag{paused: true}
	if err := l.commit(nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.resumed, []LaneID{7}) || l.backlog.lags[1] != nil {
		t.Fatalf("resumed %v, lag %v; want lane 7 resumed and its lag forgotten", r.resumed, l.backlog.lags[1])
	}
}
