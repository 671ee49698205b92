package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestRunReadsEveryLineOnce runs the example small: its report counts
// every line of the generated files once, and it exits 0.
func TestRunReadsEveryLineOnce(t *testing.T) {
	c, err := parseFlags([]string{"-files", "8", "-bytes", "400000", "-split-bytes", "30000"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if status := run(context.Background(), c, &out); status != 0 {
		t.Fatalf("exit status %d:\n%s", status, out.String())
	}
	for _, want := range []string{"objects:    8,", "missing:    0\n", "duplicates: 0\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestCheckFindsMissesAndDuplicates: the tally's check reports a line never
// delivered, one delivered twice and one delivered where no line starts.
func TestCheckFindsMissesAndDuplicates(t *testing.T) {
	want := lines{lines: map[string][]int64{"a": {0, 5, 9}}}
	tl := newTally(1)
	tl.add(0, "a", 0)
	tl.add(0, "a", 5)
	tl.add(0, "a", 5)
	tl.add(0, "a", 7)
	r := tl.check(want)
	if r.missing != 1 || r.duplicates != 1 || r.unknown != 1 || r.lines != 3 || r.delivered != 4 {
		t.Fatalf("check = %+v, want 1 missing, 1 duplicate, 1 unknown of 3 lines, 4 deliveries", r)
	}
}

// TestParseFlagsRefusesBadValues names the flag to fix.
func TestParseFlagsRefusesBadValues(t *testing.T) {
	for _, args := range [][]string{{"-workers", "0"}, {"-files", "1"}, {"-split-bytes", "0"}} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("parseFlags(%v) = %v, want an error naming %s", args, err, args[0])
		}
	}
}
