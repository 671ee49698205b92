package coordctl

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestMovesBetweenNamesEachChange(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	a := status{owners: map[string]owner{
		"claimed": {"", splitRunnable}, "moved": {"w1", splitHeld}, "done": {"w1", splitHeld}, "back": {"w2", splitHeld},
		"crashed": {"w3", splitHeld}, "poison": {"", splitRunnable}, "requeue": {"", splitQuarantined}, "same": {"w1", splitHeld},
	}}
	b := status{owners: map[string]owner{
		"claimed": {"w1", splitHeld}, "moved": {"w2", splitHeld}, "done": {"w1", splitCompleted}, "back": {"", splitRunnable},
		"crashed": {"w3", splitRunnable}, "poison": {"", splitQuarantined}, "requeue": {"", splitRunnable}, "same": {"w1", splitHeld},
		"new": {"", splitRunnable},
	}}
	var got []string
	for _, m := range movesBetween(a, b, at) {
		got = append(got, m.split+": "+m.what)
	}
	want := "back: handed back by w2|claimed: claimed by w1|crashed: session of w3 ended|done: completed by w1|moved: w1 -> w2|new: planned|poison: quarantined|requeue: requeued"
	if strings.Join(got, "|") != want {
		t.Fatalf("moves\n got %s\nwant %s", strings.Join(got, "|"), want)
	}
}

func TestRenderWatchShowsBarWorkersAndMoves(t *testing.T) {
	s := status{Job: "j", State: stateRunning, Finality: "final", Generation: 2, Leader: &leaderStatus{Instance: "w1"},
		Workers: []workerStatus{{Instance: "w1", Held: 2, HeldWeight: 30}},
		Splits:  splitTotals{Held: 2, HeldWeight: 30, Completed: 1, Total: 3, Remaining: 2, TotalWeight: 40, CompletedWeight: 10, RemainingWeight: 30}}
	at := time.Date(2026, 1, 1, 12, 0, 5, 0, time.UTC)
	moves := []move{{at: at.Add(-time.Second), split: "a", what: "claimed by w1"}, {at: at, split: "b", what: "completed by w1"}}
	var b strings.Builder
	renderWatch(&b, s, moves, at, false)
	out := b.String()
	for _, want := range []string{
		`job "j"  12:00:05`,
		"state running, plan final generation 2, leader w1, 1 live worker\n",
		"[" + strings.Repeat("#", 10) + strings.Repeat(".", 30) + "] 25.0% of the weight completed (1 of 3 splits)",
		"w1      2     30",
		"recent moves:\n  12:00:05  b  completed by w1\n  12:00:04  a  claimed by w1\n",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("frame lacks %q:\n%s", want, out)
		}
	}
}

// driveWatch runs watchLoop with style over a read that returns frames, then
// fails ("store down"), with a manual tick: one refresh at once and one per
// tick. It returns what the loop wrote once the failure is shown and ctx has
// ended the loop. The clock stands at 12:00:00.
func driveWatch(t *testing.T, frames []status, style watchStyle) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	tick := make(chan time.Time)
	n := 0
	read := func() (status, error) {
		n++
		if n > len(frames) {
			return status{}, errors.New("store down")
		}
		return frames[n-1], nil
	}
	var out syncBuffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchLoop(ctx, read, tick, func() time.Time { return time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC) }, &out, style)
	}()
	for range frames {
		tick <- time.Time{}
	}
	eventually(t, 10*time.Second, "the failed refresh", func() bool { return strings.Contains(out.String(), "store down") })
	cancel()
	<-done
	return out.String()
}

// TestWatchLoopRefreshesUntilCancelled drives the loop, redrawing as on a
// terminal: one frame at once, one per tick, moves accumulated, a failed
// refresh shown under the last good frame, and a return when ctx ends.
func TestWatchLoopRefreshesUntilCancelled(t *testing.T) {
	out := driveWatch(t, []status{
		{Job: "j", owners: map[string]owner{"a": {"", splitRunnable}}},
		{Job: "j", owners: map[string]owner{"a": {"w1", splitHeld}}},
	}, watchStyle{redraw: true})
	frameTexts := strings.Split(out, "\x1b[H\x1b[2J")[1:]
	if len(frameTexts) != 3 {
		t.Fatalf("rendered %d frames, want 3:\n%q", len(frameTexts), out)
	}
	if strings.Contains(frameTexts[0], "recent moves") || !strings.Contains(frameTexts[1], "a  claimed by w1") {
		t.Fatalf("frames 1 and 2 = %q, %q; want the claim only in the second", frameTexts[0], frameTexts[1])
	}
	if !strings.Contains(frameTexts[2], "a  claimed by w1") || !strings.Contains(frameTexts[2], "refresh failed: store down") {
		t.Fatalf("frame 3 = %q, want the last good frame and the failure", frameTexts[2])
	}
}

// TestWatchLoopWritesPlainLinesOffATerminal drives the loop as into a pipe:
// no escape sequences, a line per move and one status line per refresh,
// and a failed refresh as a line of its own.
func TestWatchLoopWritesPlainLinesOffATerminal(t *testing.T) {
	out := driveWatch(t, []status{
		{Job: "j", State: stateRunning, Splits: splitTotals{Total: 2, TotalWeight: 20}, owners: map[string]owner{"a": {"", splitRunnable}, "b": {"", splitRunnable}}},
		{Job: "j", State: stateRunning, Leader: &leaderStatus{Instance: "w1"}, Workers: []workerStatus{{Instance: "w1"}},
			Splits: splitTotals{Total: 2, Held: 1, Completed: 1, TotalWeight: 20, CompletedWeight: 5},
			owners: map[string]owner{"a": {"w1", splitHeld}, "b": {"w1", splitCompleted}}},
	}, watchStyle{})
	want := `12:00:00 running, leader none, 0 workers: 0.0% of the weight completed (0 of 2 splits), 0 held, 0 quarantined
12:00:00   a claimed by w1
12:00:00   b completed by w1
12:00:00 running, leader w1, 1 worker: 25.0% of the weight completed (1 of 2 splits), 1 held, 0 quarantined
12:00:00 refresh failed: store down
`
	if out != want {
		t.Fatalf("plain output\n got %q\nwant %q", out, want)
	}
}

func TestRenderWatchColoursOnlyWhenAsked(t *testing.T) {
	s := status{Job: "j", Splits: splitTotals{Completed: 1, Quarantined: 1, Total: 2, TotalWeight: 10, CompletedWeight: 5}}
	var plain, colored strings.Builder
	renderWatch(&plain, s, nil, time.Time{}, false)
	renderWatch(&colored, s, nil, time.Time{}, true)
	if strings.Contains(plain.String(), "\x1b") {
		t.Fatalf("uncoloured frame has escapes: %q", plain.String())
	}
	for _, want := range []string{"[\x1b[32m" + strings.Repeat("#", barWidth/2) + "\x1b[0m", "\x1b[31mquarantined 1\x1b[0m"} {
		if !strings.Contains(colored.String(), want) {
			t.Fatalf("coloured frame lacks %q: %q", want, colored.String())
		}
	}
}
