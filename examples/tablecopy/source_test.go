package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/testkit"
)

// lane fixture: a generated table whose whole key range is one split.
type laneFixture struct {
	t     testing.TB
	db    *sql.DB
	tb    table
	spec  coordination.SplitSpec
	keys  idRange
	sink  *sink
	tally *tally
}

// newLaneFixture generates rows rows and prepares an empty sink.
func newLaneFixture(t testing.TB, rows int64) *laneFixture {
	t.Helper()
	db, tb := generatedTable(t, rows)
	if err := prepareSink(t.Context(), db, tb, true); err != nil {
		t.Fatal(err)
	}
	k, err := readKeyRange(t.Context(), db, tb)
	if err != nil {
		t.Fatal(err)
	}
	keys := idRange{Table: tb.name, Lo: k.min, Hi: k.max + 1}
	desc, err := json.Marshal(keys)
	if err != nil {
		t.Fatal(err)
	}
	return &laneFixture{
		t: t, db: db, tb: tb, keys: keys,
		spec:  coordination.SplitSpec{ID: "ids-0", Descriptor: desc, Weight: uint64(rows)},
		sink:  newSink(db, tb, "w0"),
		tally: &tally{out: t.Output()},
	}
}

// source returns a source over the fixture, with pages of page rows.
func (f *laneFixture) source(page int, sinkResume bool, pause time.Duration) *source {
	s := newSource("w1", newPager(f.db, f.tb, page), newSink(f.db, f.tb, "w1"), sinkResume, f.tally, slog.New(slog.NewTextHandler(f.t.Output(), nil)))
	s.pause = pause
	return s
}

// keyAfter returns the key the page after the first n rows starts at.
func (f *laneFixture) keyAfter(n int) int64 {
	f.t.Helper()
	_, next, err := newPager(f.db, f.tb, n).page(f.t.Context(), f.keys.Lo, f.keys.Hi)
	if err != nil {
		f.t.Fatal(err)
	}
	return next
}

// run runs src under driver.Run on a scripted coordinator and returns the
// script and a function that waits for the run's outcome (the cleanup ends
// the run if the test did not).
func (f *laneFixture) run(src *source) (*testkit.CoordinatorScript, func() error) {
	c, script := testkit.NewScripted()
	ctx, cancel := context.WithCancel(f.t.Context())
	done := make(chan error, 1)
	go func() {
		done <- driver.Run(ctx, c, src, driver.WithPlanner(planner{table: f.tb}), driver.WithCommitInterval(20*time.Millisecond))
	}()
	wait := sync.OnceValue(func() error { return <-done })
	f.t.Cleanup(func() {
		cancel()
		_ = wait()
		src.waitReaders()
	})
	return script, wait
}

// commitsOf returns the commits of the fixture's split so far.
func commitsOf(script *testkit.CoordinatorScript, split coordination.SplitID) []coordination.SplitProgress {
	var out []coordination.SplitProgress
	for _, c := range script.Commits() {
		if c.Split == split {
			out = append(out, c.Progress)
		}
	}
	return out
}

// awaitCommits polls the split's commits until done says so, checking on
// every poll that no committed watermark is ahead of the sink's: a lane
// commits to the coordinator only what its sink transactions committed.
func (f *laneFixture) awaitCommits(script *testkit.CoordinatorScript, what string, done func([]coordination.SplitProgress) bool) []coordination.SplitProgress {
	f.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		cs := commitsOf(script, f.spec.ID)
		mark, _, err := f.sink.watermark(f.t.Context(), string(f.spec.ID))
		if err != nil {
			f.t.Fatal(err)
		}
		for _, c := range cs {
			if c.Watermark > mark && c.Watermark > f.keys.Lo {
				f.t.Fatalf("committed watermark %d is ahead of the sink's %d", c.Watermark, mark)
			}
		}
		if done(cs) {
			return cs
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s; commits %v", what, cs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// completed reports whether the last commit completed the split.
func completed(cs []coordination.SplitProgress) bool {
	return len(cs) > 0 && cs[len(cs)-1].Completed
}

// TestResumedLaneSkipsOrAbsorbsWhatTheSinkHas plays the successor of a worker
// that died after writing 1000 rows to the sink but committing only 400 to
// the coordinator. With sinkResume the lane starts at the sink's watermark
// (600 rows not replayed); without it, it replays them and the sink absorbs
// all 600. Either way the sink ends equal to the source.
func TestResumedLaneSkipsOrAbsorbsWhatTheSinkHas(t *testing.T) {
	for _, sinkResume := range []bool{true, false} {
		t.Run(map[bool]string{true: "sink resume", false: "replay"}[sinkResume], func(t *testing.T) {
			f := newLaneFixture(t, 3000)
			dead := newSink(f.db, f.tb, "dead")
			rows, next, err := newPager(f.db, f.tb, 1000).page(t.Context(), f.keys.Lo, f.keys.Hi)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dead.write(t.Context(), string(f.spec.ID), rows, next); err != nil {
				t.Fatal(err)
			}
			script, wait := f.run(f.source(200, sinkResume, 0))
			script.Gain(f.spec, 2, &coordination.SplitProgress{Watermark: f.keyAfter(400)})
			cs := f.awaitCommits(script, "the split to complete", completed)
			if cs[len(cs)-1].Watermark != f.keys.Hi {
				t.Fatalf("completed at %d, want %d", cs[len(cs)-1].Watermark, f.keys.Hi)
			}
			script.AllComplete()
			if err := wait(); err != nil {
				t.Fatalf("Run = %v, want nil after AllComplete", err)
			}
			v, err := verify(t.Context(), f.db, f.tb)
			if err != nil {
				t.Fatal(err)
			}
			if !v.equal() || v.Sink.Rows != 3000 {
				t.Fatalf("sink %s, source %s; want equal", v.Sink, v.Source)
			}
			wantSkipped, wantAbsorbed := int64(600), int64(0)
			if !sinkResume {
				wantSkipped, wantAbsorbed = 0, 600
			}
			if f.tally.skipped.Load() != wantSkipped || v.Absorbed != wantAbsorbed || v.Written["w1"] != 2000 {
				t.Fatalf("skipped %d, absorbed %d, w1 wrote %d; want %d, %d, 2000",
					f.tally.skipped.Load(), v.Absorbed, v.Written["w1"], wantSkipped, wantAbsorbed)
			}
			if sinkResume && cs[0].Watermark < next {
				t.Fatalf("first commit at %d, behind the sink's watermark %d it resumed from", cs[0].Watermark, next)
			}
		})
	}
}

// TestRevokedLaneHandsOverAtItsSinkWatermark revokes a lane midway: it stops
// at a page boundary and hands the split back with a cut equal to the sink's
// watermark, so the next owner replays nothing.
func TestRevokedLaneHandsOverAtItsSinkWatermark(t *testing.T) {
	f := newLaneFixture(t, 3000)
	script, wait := f.run(f.source(10, true, 2*time.Millisecond))
	script.Gain(f.spec, 1, nil)
	// A commit past the range's start: the first commit may come before
	// the first page (a fresh lane commits its start), and a drain then
	// would leave no page in the sink to compare the cut with.
	f.awaitCommits(script, "a commit past the first page", func(cs []coordination.SplitProgress) bool {
		return len(cs) > 0 && cs[len(cs)-1].Watermark > f.keys.Lo
	})
	script.Revoke(f.spec.ID)
	deadline := time.Now().Add(waitFor)
	for !slices.Contains(script.ReleasedDrained(), f.spec.ID) {
		if time.Now().After(deadline) {
			t.Fatalf("split not handed back after a drain; declined %v, released %v", script.Declined(), script.Released())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cs := commitsOf(script, f.spec.ID)
	cut := cs[len(cs)-1]
	mark, _, err := f.sink.watermark(t.Context(), string(f.spec.ID))
	if err != nil {
		t.Fatal(err)
	}
	if cut.Completed || cut.Watermark != mark || mark >= f.keys.Hi {
		t.Fatalf("cut %+v, sink watermark %d, range end %d; want an incomplete cut at the sink's watermark", cut, mark, f.keys.Hi)
	}
	var inSink int64
	if err := f.db.QueryRow("SELECT count(*) FROM "+quote(sinkName(f.tb))+" WHERE id >= ?", mark).Scan(&inSink); err != nil || inSink != 0 {
		t.Fatalf("%d rows at or past the cut are in the sink, %v; want 0", inSink, err)
	}
	script.AllComplete()
	if err := wait(); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
}

// TestAKilledLaneDoesNotWarnOfTheSinkWatermark kills the worker before a
// resumed lane reads the sink's watermark: the read fails with the
// cancelled context, which is the kill, not something to warn about.
func TestAKilledLaneDoesNotWarnOfTheSinkWatermark(t *testing.T) {
	f := newLaneFixture(t, 100)
	var logs bytes.Buffer
	s := newSource("w1", newPager(f.db, f.tb, 10), newSink(f.db, f.tb, "w1"), true, f.tally, slog.New(slog.NewTextHandler(&logs, nil)))
	s.crash()
	l := &lane{split: f.spec.ID, keys: f.keys}
	if got := s.skipToSink(l, f.keys.Lo); got != f.keys.Lo {
		t.Fatalf("skipToSink = %d, want %d (nothing skipped)", got, f.keys.Lo)
	}
	if logs.Len() != 0 {
		t.Fatalf("a killed lane logged:\n%s", logs.String())
	}
}
