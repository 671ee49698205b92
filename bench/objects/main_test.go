package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunTiny measures a 2 MiB file once: both readers count the same
// lines and the report has its medians.
func TestRunTiny(t *testing.T) {
	var out bytes.Buffer
	path := filepath.Join(t.TempDir(), "f.ndjson")
	if err := run([]string{"-file", path, "-size", "2MiB", "-rounds", "1"}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "median lane:") {
		t.Fatalf("no medians in the report:\n%s", out.String())
	}
}
