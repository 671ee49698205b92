package main

import (
	"strings"
	"testing"
)

// TestFleetCountsAMoveOnceAndTakeoversApart checks that the second half of
// a cooperative move (a gain exactly where a drain stopped) is not also
// counted as a takeover, while a gain after a crash or a forced loss is.
func TestFleetCountsAMoveOnceAndTakeoversApart(t *testing.T) {
	var lines []string
	f := newFleet(func(l string) { lines = append(lines, l) })

	f.gained("w1", "s1", 0, nil)
	f.ended("w1", laneEnd{split: "s1", acked: 40, drained: true})
	f.gained("w2", "s1", 40, &delivery{Split: "s1", Worker: "w1", Start: 0, End: 40})

	f.gained("w1", "s2", 0, nil)
	f.ended("w1", laneEnd{split: "s2", acked: 70}) // revoked: forced
	f.gained("w2", "s2", 50, &delivery{Split: "s2", Worker: "w1", Start: 0, End: 70})

	f.gained("w3", "s3", 0, nil)
	f.crashed("w3")
	f.gained("w2", "s3", 30, &delivery{Split: "s3", Worker: "w3", Start: 0, End: 30}) // crashed right after a commit

	takeovers, moves, losses := f.counts()
	if takeovers != 2 || moves != 1 || losses != 1 {
		t.Fatalf("takeovers %d, moves %d, losses %d; want 2 (forced, crash), 1, 1", takeovers, moves, losses)
	}
	log := strings.Join(lines, "\n")
	for _, want := range []string{
		"w2 resumed s1 at record 40, exactly where w1 stopped (no replay)",
		"w2 took over s2 from w1 at record 50, its last commit; 20 records delivered after it will replay",
		"w2 resumed s3 at record 30, exactly where w3 stopped (no replay)",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("event log lacks %q:\n%s", want, log)
		}
	}
}
