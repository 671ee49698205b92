package main

import (
	"strings"
	"testing"
)

// TestFleetTellsEachHandOverOnce gains splits after previous tenancies: a
// resume before the previous tenancy's end is a takeover (with its
// replay), one at its end a move; a second gain after the same tenancy (the
// first gainer recorded nothing before losing the split) is not told again.
func TestFleetTellsEachHandOverOnce(t *testing.T) {
	var lines []string
	f := newFleet(func(l string) { lines = append(lines, l) })
	crashed := &delivery{Split: "s1", Worker: "a", Start: 0, End: 700}
	f.gained("b", "s1", 500, crashed)
	f.gained("c", "s1", 500, crashed)
	f.gained("b", "s2", 300, &delivery{Split: "s2", Worker: "a", Start: 0, End: 300})
	f.gained("b", "s3", 0, nil)
	takeovers, moves := f.counts()
	if takeovers != 1 || moves != 1 || len(lines) != 2 {
		t.Fatalf("%d takeovers, %d moves, lines %q; want 1, 1 and two lines", takeovers, moves, lines)
	}
	if want := "b took over s1 from a at record 500, its last commit; 200 records delivered after it will replay"; lines[0] != want {
		t.Fatalf("line %q, want %q", lines[0], want)
	}
	if !strings.Contains(lines[1], "b resumed s2 at record 300, exactly where a stopped (no replay)") {
		t.Fatalf("line %q", lines[1])
	}
}
